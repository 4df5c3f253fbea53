from benchmarks.loadgen.cli import main

raise SystemExit(main())
