// Implemented by the core work (issue #2).
