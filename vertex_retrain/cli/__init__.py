"""The command line (``compile.py``, ``vertex-retrain``): every command handler and its operations.

- ``main``: the argument parser and the dispatch table; imports nothing heavy.
- ``compile_commands``: ``compile`` and ``estimate``; ``compiling`` compiles and describes
  specs, ``costing`` prices one run from the compiled defaults.
- ``run_command``: ``run``; ``local_run`` runs on this machine, ``vertex_submit`` submits a
  ``PipelineJob``, ``params`` parses and checks ``--param`` overrides.
- ``template_upload`` (``upload``) and ``template_ref`` (Artifact Registry version URIs).
- ``schedule_reconcile`` (``schedule``) and ``vertex_schedule_client``, its default
  :class:`vertex_retrain.schedules.ScheduleClient`.
- ``validate_command`` (``validate``), ``registry_commands`` (``models``, ``endpoints``,
  ``serve``) and ``demo``.
"""
