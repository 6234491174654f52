from tfdash.cli import main

raise SystemExit(main())
