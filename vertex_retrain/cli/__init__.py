"""The command line (``vertex-retrain``, or ``python compile.py`` in a clone): every command
handler and its operations. Every command that takes a pipeline takes a user's pipeline too.

- ``main``: the argument parser and the dispatch table; imports nothing heavy.
- ``pipeline_source``: the one resolver of a PIPELINE argument (a template name, a compiled
  file, ``module:attr``, ``file.py:attr``; ``python_refs`` loads Python objects).
- ``compile_commands``: ``compile`` and ``estimate``; ``compiling`` compiles and describes
  specs, ``costing`` prices one run from the jobs ``job_tasks`` finds in the compiled spec
  (``spec_tasks`` walks its tasks), ``week_costs`` the kinds of week and a month, by what
  ``trainer_declaration`` reads of the trainer's warm-start declaration.
- ``run_command``: ``run``; ``local_run`` runs on this machine (``local_api`` is
  ``vertex_retrain.run_local``), ``vertex_submit`` submits a ``PipelineJob``, ``params``
  parses and checks ``--param`` overrides (``param_files``: ``@FILE`` values), and
  ``param_defaults`` checks a pipeline's own defaults the same way for every command.
- ``preflight`` and ``preflight_checks``: the checks before a submission; ``cache_keys``.
- ``upload_command`` (``upload``), ``template_upload`` (the registries) and ``template_ref``
  (Artifact Registry version URIs).
- ``schedule_command`` (``schedule``): ``schedule_source`` reads the user's declarations,
  ``schedule_reconcile`` plans and applies through ``vertex_schedule_client``, its default
  :class:`vertex_retrain.schedules.ScheduleClient`.
- ``validate_command`` (``validate``), ``registry_commands`` (``models``, ``endpoints``,
  ``serve``), ``history_command`` (``history``), ``build_image`` (``build-image``).
"""
