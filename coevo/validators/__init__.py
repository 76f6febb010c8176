"""coevo.validators"""
