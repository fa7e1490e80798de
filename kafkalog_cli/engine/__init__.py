"""Read side: LogDir -> PartitionLog -> Segment. Lazy, read-only; problems become Findings."""
