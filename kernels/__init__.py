"""Taichi kernels, one module per MuJoCo pipeline stage (installed as tiphys.kernels).

This package never imports tiphys (tests/test_layering.py): MuJoCo's enums and numbers
come from ``consts``, the runtime settings that tiphys.init writes from ``config``.
"""
