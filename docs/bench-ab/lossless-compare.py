import json, glob, os, re, statistics as st, sys

# Ratios within each run of lossless-run.sh's output (shmbus's rate over
# ringfire's, lossy and lossless), paired old against new.
DIR = sys.argv[1] if len(sys.argv) > 1 else '.'
def load(v):
    out = {}
    for f in glob.glob(os.path.join(DIR, f'{v}-*.json')):
        i = int(re.search(r'-(\d+)\.json', f).group(1))
        d = json.load(open(f))
        by = {(r['mechanism'], r['msg_size']): r for r in d['results']
              if r['pattern'] == 'throughput' and not r.get('skipped') and r.get('msgs_per_sec')}
        fig = {}
        for s in sorted({k[1] for k in by}):
            try:
                fig[(s, 'lossy')] = by[('shmbus', s)]['msgs_per_sec'] / by[('ringfire', s)]['msgs_per_sec']
                fig[(s, 'lossless')] = by[('shmbus-lossless', s)]['msgs_per_sec'] / by[('ringfire-lossless', s)]['msgs_per_sec']
                fig[(s, 'sys')] = by[('shmbus-lossless', s)]['sender']['syscalls_per_msg']
                fig[(s, 'lost')] = (by[('shmbus', s)]['lost'], by[('ringfire', s)]['lost'])
            except KeyError:
                pass
        out[i] = fig
    return out
old, new = load('old'), load('new')
pairs = sorted(set(old) & set(new))
print(f"{len(pairs)} paired runs")
for s in (16, 256, 4096, 65536):
    for kind in ('lossy', 'lossless'):
        a = [old[i][(s, kind)] for i in pairs if (s, kind) in old[i]]
        b = [new[i][(s, kind)] for i in pairs if (s, kind) in new[i]]
        if not a: continue
        wins = sum(1 for i in pairs if new[i].get((s,kind),0) > old[i].get((s,kind),0))
        print(f"{s:6} B {kind:8} / ringfire: old median {st.median(a):5.2f} ({min(a):.2f}..{max(a):.2f})  "
              f"new median {st.median(b):5.2f} ({min(b):.2f}..{max(b):.2f})  new>=1 in {sum(x>=1 for x in b)}/{len(b)} (old {sum(x>=1 for x in a)}/{len(a)}); new above old in {wins}/{len(pairs)} pairs")
    sa = [old[i][(s,'sys')] for i in pairs if (s,'sys') in old[i]]; sb=[new[i][(s,'sys')] for i in pairs if (s,'sys') in new[i]]
    if sa: print(f"{s:6} B shmbus-lossless sender sys/msg: old median {st.median(sa):.3f} ({min(sa):.3f}..{max(sa):.3f}) new median {st.median(sb):.3f} ({min(sb):.3f}..{max(sb):.3f})")
    la = [old[i][(s,'lost')] for i in pairs if (s,'lost') in old[i]]; lb=[new[i][(s,'lost')] for i in pairs if (s,'lost') in new[i]]
    if la: print(f"{s:6} B lost (shmbus, ringfire) per run: old {la}  new {lb}")
