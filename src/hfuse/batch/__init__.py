"""Tuning at scale: many requests from a manifest, compiles on a pool of CPU processes
(or Ray tasks), measurements on one isolated worker per GPU, resumable.

- ``inputs``: how a request's kernel launches are made (benchmark workloads or a user's
  function), as values that travel to another process or machine;
- ``manifest``: the manifest file read into ``TuneRequest`` values;
- ``runner``: one request tuned into an ``Outcome``; a batch on this machine;
- ``journal``: the outcomes written as they come, so a killed batch resumes;
- ``ray_runner``: the same batch on Ray (compiles as tasks, one actor per GPU).
"""
