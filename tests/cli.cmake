# CLI tests: filled in by tests/cli.cmake
