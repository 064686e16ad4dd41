# Benchmarks (built with make, not run by make check).
