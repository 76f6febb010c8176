"""Before a run (`coevo plan`): its plan, estimate, calibration and hardware; after it, its cost."""
