"""SIB Method 2, the task-specification detector (paper Section 5, Table 3): its settings
(:mod:`.settings`) and the method (:mod:`.method`)."""
