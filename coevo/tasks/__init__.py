"""coevo.tasks"""
