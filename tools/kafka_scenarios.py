"""Generated scenarios against real Kafka brokers (issue 36): the long run and replays.

    python tools/kafka_scenarios.py --hours 2 --versions all --report scenarios-report.json
    python tools/kafka_scenarios.py --seeds 1-5 --versions 3.9.2
    python tools/kafka_scenarios.py --replay case.json

The generator, the comparisons and the runner live in tests/kafka/scenarios/ (see runner.py); this only
puts tests/kafka on the import path. Runs niced; one broker at a time.
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "kafka"))

if __name__ == "__main__":
    os.nice(int(os.environ.get("KAFKALOG_SCENARIOS_NICE", "10")))
    from scenarios.runner import main
    sys.exit(main())
