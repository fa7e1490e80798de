"""What dump-log's two renderers (``kafka_text.TextRenderer``, ``jsonl.JsonRenderer``) share: the options
they were made with, the count of records a decoder could not read, and how a run of batches read by the
compiled record path is written (``emit_run``): by the C renderer (``native_lines``) when that is pure
formatting, else as the ``BatchItem``s it stands for, through the renderer's own ``emit``.
"""
from __future__ import annotations


class DumpRenderer:
    def __init__(self, out, key_decoder: str = "string", value_decoder: str = "string",
                 print_data: bool = False, skip_record_metadata: bool = False, record_decoding=None) -> None:
        self.out = out
        self.key_decoder = key_decoder
        self.value_decoder = value_decoder
        self.print_data = print_data
        self.skip_metadata = skip_record_metadata
        self.record_decoding = record_decoding    # record_decoders.RecordDecoding, or None
        self.problems = 0                          # records a decoder could not read (exit status 1)

    def emit(self, e) -> None:
        raise NotImplementedError

    def native_render(self, e, nl):
        """A function writing the run's lines into a target (``render(target, batches=None, decoded=None)``),
        or None when the C renderer does not write this output (its decoders are not pure formatting)."""
        raise NotImplementedError

    def emit_run(self, e) -> None:
        """Batches read by the compiled record path: written by the C renderer when that is pure formatting
        (the same bytes as ``emit``, tests/test_native_parity.py), else as the BatchItems they stand for."""
        from . import native_lines as nl
        chosen = None if self.record_decoding is None else self.record_decoding.for_file(e.file)
        render = self.native_render(e, nl)
        if render is not None:
            if chosen is None or not (e.deep and self.print_data):      # no record decoded
                nl.write_lines(self.out, render)
                return
            programs = nl.compiled_decoder(chosen[1])
            if programs is not None:       # a coordinator decoder compiled from the schema (record_decoders)
                decoded, pure = nl.decoded_texts(e.scan, programs, chosen[0])
                for kind, part in nl.batch_slices(e.scan, pure):
                    if kind == "native":
                        nl.write_lines(self.out, lambda target, part=part: render(target, part, decoded))
                    else:
                        self.emit(e.item(part))
                return
        for item in e.items():
            self.emit(item)
