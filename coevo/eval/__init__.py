"""coevo.eval"""
