import sys

from flake8_tensorconv.cli import main

sys.exit(main())
