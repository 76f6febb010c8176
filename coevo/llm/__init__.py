"""coevo.llm"""
