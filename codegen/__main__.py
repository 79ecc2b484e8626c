import argparse
import os


def main():
    ap = argparse.ArgumentParser(prog="python -m codegen")
    ap.add_argument("--manifest")
    ap.add_argument("--out")
    ap.add_argument("--namespace", default="at::musa")
    ap.add_argument("--csrc")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    if a.out:
        os.makedirs(a.out, exist_ok=True)


main()
