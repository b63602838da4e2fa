"""The error of an archive that cannot be read as a run (a documented exception of the API)."""

from __future__ import annotations


class ArchiveError(ValueError):
    """A path that is not a readable run archive: not NetCDF4 or zarr, damaged (truncated,
    torn), missing a required variable or attribute, without snapshots, or a polished measure
    where a run is needed. ``str(err)`` names the file and the cause on one line; the command
    line prints it as ``error: ...`` with exit status 2."""
