"""`python -m clientsdk chat --base-url ... --api-key ... --user-key ...`"""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
