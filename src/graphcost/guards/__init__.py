"""What every verb reads and writes through, on the floor below everything but `graphcost.errors`.

* `atomic`: files written whole or not at all (a temporary file in the target's directory, renamed into place
  on success), and the checks of output paths that every command runs before any work;
* `outputs`: the one guard of every output path (no device, no virtual or read-only file system, never inside
  an input);
* `bounds`: the bounds of every number graphcost takes from a user, and ArgumentError.
"""
