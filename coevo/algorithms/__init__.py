"""coevo.algorithms"""
