"""Side-by-side benchmarks (ratios, never pass/fail timings). Run with ``make bench``."""
