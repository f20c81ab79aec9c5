"""Golden Kineto traces with planted faults and fixed twins (see golden/README.md)."""
