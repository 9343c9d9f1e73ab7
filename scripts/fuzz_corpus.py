#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora from the documentation (scripts/fuzz.sh runs it).

    python3 scripts/fuzz_corpus.py OUT_DIR [SOURCE_DIR]

Every spec string of docs/spec.md (the grammar's examples, the values checked
later, the error examples, the canonical forms, the C++ examples) and the
quoted spec strings of README.md, docs/ and the command-line tests (the cases
of issue 18 among them) seed fuzz_spec; the region strings of the same pages
seed fuzz_region; pairs of specs of the same dimension, with and without a
region, seed fuzz_plan ("N|SRC|DST[|REGION]", fuzz/fuzz_plan.cpp). The seeds are generated, not kept
in git, so they follow the documentation as it changes; OUT_DIR/<target>/ gets
one file per seed, named by a hash of its content.
"""
import hashlib
import pathlib
import re
import sys

SHAPE = re.compile(r"-?\d+(?:x-?\d+)*")
REGION = re.compile(r"\d+(?:x\d+)*(?: from=[-\dx]*)?(?: to=[-\dx]*)?")


def specs_of(text):
    """Spec strings in code blocks and in C++ string literals of a Markdown page."""
    out = []
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            s = line.strip()
            if s.startswith("->"):  # a canonical form
                s = s[2:].strip()
            s = re.split(r"\s{2,}", s)[0]  # drop the comment column
            if SHAPE.match(s) and not s.startswith("bad "):
                out.append(s)
        for lit in re.findall(r'(?<!Region::)parse\("([^"]*)"\)', line):  # Layout::parse's, not regions
            out.append(lit)
    return out


KEYWORD = r"(?:tile=|offset=|esize=|storage=|ld=|grid=|block_cyclic|random|band|table|function)"


def quoted_specs_of(text):
    """Quoted strings that start like a spec: a shape, then a keyword."""
    return re.findall(r'"(-?\d+(?:x-?\d+)* ' + KEYWORD + r'[^"]*)"', text)


def regions_of(text):
    """Region strings: '7000x7000 from=500x300 to=1000x0' and the like."""
    out = []
    for m in re.finditer(r"\b\d+(?:x\d+)* from=[-\dx]+(?: to=[-\dx]+)?", text):
        out.append(m.group(0))
    for lit in re.findall(r'Region::parse\("([^"]*)"\)', text):
        out.append(lit)
    return out


def ndim(spec):
    m = SHAPE.match(spec)
    return m.group(0).count("x") + 1 if m else 0


def write(out, target, seeds):
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    seen = set()
    for s in seeds:
        data = s.encode()
        if data in seen:
            continue
        seen.add(data)
        (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)
    return len(seen)


def main():
    out = pathlib.Path(sys.argv[1])
    root = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else pathlib.Path(__file__).resolve().parent.parent)
    specs = specs_of((root / "docs/spec.md").read_text())
    regions = []
    for page in [root / "README.md", *sorted((root / "docs").glob("*.md")), root / "tests/python/test_cli.py"]:
        specs += quoted_specs_of(page.read_text())
        regions += regions_of(page.read_text())
    specs = list(dict.fromkeys(specs))
    regions = list(dict.fromkeys(regions))
    if len(specs) < 10 or not regions:
        sys.exit(f"fuzz_corpus: found only {len(specs)} specs and {len(regions)} regions; has docs/spec.md changed?")

    n_spec = write(out, "fuzz_spec", specs)
    # (a spec seed may be bad input that starts with no shape: it has none to give)
    shapes = list(dict.fromkeys(m.group(0) for m in map(SHAPE.match, specs) if m))

    def dims_of_region(r):  # 0 for an empty region (bad input: Region::parse(""))
        return r.split()[0].count("x") + 1 if r.split() else 0

    # Each region alone and against the first two pairs of shapes of its dimension.
    region_seeds = list(regions)
    for r in regions:
        same = [a for a in shapes if ndim(a) == dims_of_region(r)]
        region_seeds += [f"{r}|{a}|{b}" for a, b in list(zip(same, same[1:]))[:2]]
    n_region = write(out, "fuzz_region", region_seeds)

    # Spec pairs of one dimension: each spec with itself and with the next three
    # of its dimension, 1-4 ranks in turn, whole and with the first region that fits.
    plan = []
    for i, a in enumerate(specs):
        same = [b for b in specs[i:] if ndim(b) == ndim(a)][:4]
        fitting = [r for r in regions if dims_of_region(r) == ndim(a)][:1]
        for j, b in enumerate(same):
            n = str(1 + (i + j) % 4)
            plan.append(f"{n}|{a}|{b}")
            plan += [f"{n}|{a}|{b}|{r}" for r in fitting]
    n_plan = write(out, "fuzz_plan", plan)
    print(f"fuzz_corpus: {n_spec} spec, {n_region} region, {n_plan} plan seeds in {out}")


if __name__ == "__main__":
    main()
