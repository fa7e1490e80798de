"""kafkalog_formats: declarative schemas and pure decoders/encoders for Kafka's on-disk formats.

Installed under the import name ``kafkalog_formats`` (the source folder is ``formats/``).
Nothing in this package opens files: every decoder takes bytes or a memoryview plus a position.
"""
