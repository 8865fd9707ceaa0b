#!/usr/bin/env python3
"""Per-source totals of deepinfer-so-check output (JSONL on stdin or files).

  zstd -dc ../shared/data/jsonschemabench/maskbench.jsonl.zst | build/recipe/deepinfer-so-check > so.jsonl
  python3 bench/so_summary.py so.jsonl

Columns: schemas, % compiled, invalid instances accepted (must be 0), valid instances accepted
(% of the valid instances of compiled schemas), mask time mean / p99 (us, over every token of
every walked instance), compile time mean / p99 (ms, compiled schemas); with --warm, the second pass's mask mean / p99; mismatches between
masks and advance (must be 0)."""
import collections, fileinput, json, sys

def edges():
    e = [float(i) for i in range(101)]
    e += [100 + 10 * i for i in range(1, 91)]
    e += [1000 + 100 * i for i in range(1, 91)]
    return e

def pct(hist, q):
    total = sum(hist.values())
    if total == 0:
        return 0.0
    need, run = q * total, 0
    ed = edges()
    for b in sorted(hist):
        run += hist[b]
        if run >= need:
            return ed[b + 1] if b + 1 < len(ed) else 10000.0
    return 10000.0

def main():
    per = collections.defaultdict(lambda: dict(n=0, comp=0, inv_acc=0, inv=0, val=0, val_acc=0,
                                               mask_sum=0.0, mask_n=0, hist=collections.Counter(), cus=[],
                                               wsum=0.0, wn=0, whist=collections.Counter(), mism=0))
    errors = collections.Counter()
    sizes = []  # bytes of each compiled schema's automata (what [so] cache_mib bounds)
    walked = []  # the same after its tests were walked (parts built on first use included)
    sampled = []  # schemas with random outputs drawn (--sample)
    for line in fileinput.input(sys.argv[1:]):
        d = json.loads(line)
        if 'sampled' in d:
            sampled.append(d)
        if d['compiled'] and 'bytes' in d:
            sizes.append(d['bytes'])
        if d['compiled'] and 'bytes_walked' in d:
            walked.append(d['bytes_walked'])
        src = d.get('source') or d['file'].split('---')[0]
        for key in (src, 'ALL'):
            s = per[key]
            s['n'] += 1
            if not d['compiled']:
                continue
            s['comp'] += 1
            s['cus'].append(d['compile_us'])
            s['mask_sum'] += d['mask_us_mean'] * d['mask_n']
            s['mask_n'] += d['mask_n']
            for b, c in d['mask_hist'].items():
                s['hist'][int(b)] += c
            s['mism'] += d.get('mismatch', 0)
            if 'warm_mask_n' in d:
                s['wsum'] += d['warm_mask_us_mean'] * d['warm_mask_n']
                s['wn'] += d['warm_mask_n']
                for b, c in d['warm_mask_hist'].items():
                    s['whist'][int(b)] += c
            for t in d['tests']:
                if t['valid']:
                    s['val'] += 1; s['val_acc'] += t['accepted']
                else:
                    s['inv'] += 1; s['inv_acc'] += t['accepted']
        if not d['compiled']:
            e = d['error'] or ''
            errors[e.split("'")[0] + ("'" + e.split("'")[1] + "'" if "'" in e else '')] += 1
    print(f"{'source':24} {'schemas':>7} {'compiled':>8} {'inv.acc':>7} {'valid acc':>10} {'mask mean':>9} {'mask p99':>8} {'comp mean':>9} {'comp p99':>8} {'warm mean':>9} {'warm p99':>8} {'mismatch':>8}")
    for k in sorted(per, key=lambda k: (k == 'ALL', k)):
        s = per[k]
        cus = sorted(s['cus'])
        cp99 = cus[min(len(cus) - 1, len(cus) * 99 // 100)] / 1000 if cus else 0
        cmean = sum(cus) / len(cus) / 1000 if cus else 0
        va = 100.0 * s['val_acc'] / s['val'] if s['val'] else 100.0
        mm = s['mask_sum'] / s['mask_n'] if s['mask_n'] else 0
        print(f"{k:24} {s['n']:7} {100.0*s['comp']/s['n']:7.1f}% {s['inv_acc']:4}/{s['inv']:<5} {va:6.2f}% ({s['val']}) "
              f"{mm:6.1f}us {pct(s['hist'], 0.99):6.0f}us {cmean:7.2f}ms {cp99:6.2f}ms "
              f"{(s['wsum'] / s['wn'] if s['wn'] else 0):7.1f}us {pct(s['whist'], 0.99):6.0f}us {s['mism']:8}")
    if sizes:
        sizes.sort()
        q = lambda f: sizes[min(len(sizes) - 1, int(len(sizes) * f))] / 1024
        print(f"\nbytes per compiled schema: p50 {q(0.5):.0f} KiB, p99 {q(0.99):.0f} KiB, max {sizes[-1] / 1024:.0f} KiB "
              f"({len(sizes)} schemas; the compiler's cache is bounded by [so] cache_mib)")
    if walked:
        walked.sort()
        q = lambda f: walked[min(len(walked) - 1, int(len(walked) * f))] / 1024
        print(f"bytes per compiled schema after its tests: p50 {q(0.5):.0f} KiB, p99 {q(0.99):.0f} KiB, "
              f"max {walked[-1] / 1024:.0f} KiB (key unions and other-key lexemes are built on first use)")
    if sampled:
        bad = [d for d in sampled if d['sampled_invalid']]
        print(f"\nrandom outputs (--sample): {sum(d['sampled'] for d in sampled)} drawn from {len(sampled)} schemas, "
              f"{sum(d['sampled_invalid'] for d in sampled)} invalid (in {len(bad)} schemas), "
              f"{sum(d['sampled_undecided'] for d in sampled)} the validator could not decide")
        for d in bad[:10]:
            print(f"  invalid: {d['file']}: {d.get('sampled_invalid_text', '')[:160]!r}")
    print("\nmost common compile errors:")
    for e, c in errors.most_common(25):
        print(f"{c:6}  {e}")

if __name__ == '__main__':
    main()
