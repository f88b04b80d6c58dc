"""Summary of the all-pairs GPU verification of the real-world corpus (bench/results/h100/realworld/all_pairs/):
counts read from the pytest JUnit files of the three shards, written to summary.json there."""
import gzip, json, re, sys, xml.etree.ElementTree as ET
sys.path[:0] = ["tests", "tests/api", "src"]
from corpus.realworld import manifest as M
D = "bench/results/h100/realworld/all_pairs"
pairs, failed, secs, shards = set(), [], 0.0, {}
for s in (1, 2, 3):
    root = ET.fromstring(gzip.open(f"{D}/shard{s}.xml.gz").read())
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    shards[f"all:{s}/3"] = {"tests": int(suite.get("tests")), "failures": int(suite.get("failures")),
                             "errors": int(suite.get("errors")), "skipped": int(suite.get("skipped")),
                             "wall_s": float(suite.get("time"))}
    for case in suite.iter("testcase"):
        m = re.search(r"\[(.+)\+(.+)\]$", case.get("name"))
        if case.find("failure") is not None or case.find("error") is not None or case.find("skipped") is not None:
            failed.append(case.get("name"))
        else:
            pairs.add(m.groups())
launcher = ET.parse(f"{D}/launcher.xml").getroot()
ls = launcher if launcher.tag == "testsuite" else launcher.find("testsuite")
kernels = {k for p in pairs for k in p}
fusable = [k for k in M.KERNELS.values() if "cub_block" not in k.constructs]
by_key = {k.key: k for k in M.KERNELS.values()}
second_const = sum(1 for a, b in pairs if by_key[b].constant_symbols)
second_wrapper = sum(1 for a, b in pairs if "shared_memory_wrapper" in by_key[b].constructs)
summary = {
    "gpu": open(f"{D}/gpu.csv").read().splitlines()[1].split(", ")[0],
    "driver": open(f"{D}/gpu.csv").read().splitlines()[1].split(", ")[1],
    "date": open(f"{D}/date.txt").read().splitlines(),
    "what": "every ordered pair of the fusable real-world corpus kernels tuned with hfuse.tune (correctness-only "
            "settings of tests/api/test_fuse_realworld_gpu.py) and every candidate compared bit for bit with the "
            "unfused kernels; HFUSE_REALWORLD_PAIRS=all:s/3, pytest -n 16 (pytest-xdist) on one GPU",
    "corpus_kernels": len(M.KERNELS), "fusable_kernels": len(fusable), "refused_kernels_cub_block": len(M.KERNELS) - len(fusable),
    "ordered_pairs_expected": len(fusable) * (len(fusable) - 1),
    "ordered_pairs_verified": len(pairs), "distinct_kernels_in_verified_pairs": len(kernels),
    "failed": failed,
    "pairs_second_part_reads_constant_table": second_const,
    "pairs_second_part_uses_shared_memory_wrapper": second_wrapper,
    "shards": shards,
    "launcher_with_constant_data": {"tests": int(ls.get("tests")), "failures": int(ls.get("failures")), "errors": int(ls.get("errors"))},
}
json.dump(summary, open(f"{D}/summary.json", "w"), indent=1); print(json.dumps(summary, indent=1))
