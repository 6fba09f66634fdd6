"""Summarises warm-run.sh's pairs: for the pool bus (shmbus-zc) at each
pattern and size, the distribution over paired runs of old and new p50,
p99 and throughput, the new/old ratio within each pair, and shmbus-zc's
ratio to iceoryx2 and crossbar-pool within each run (same rounds).
Run in the directory of old-N.json and new-N.json (OLD and NEW name
other prefixes, as warm-run3.sh writes them: cold, cnew, ccush)."""
import glob, json, os, re, statistics as st

def load(v):
    out = {}
    for f in glob.glob(f'{v}-*.json'):
        i = int(re.search(r'-(\d+)\.json$', f).group(1))
        out[i] = json.load(open(f))
    return out

old, new = load(os.environ.get('OLD', 'old')), load(os.environ.get('NEW', 'new'))
pairs = sorted(set(old) & set(new))

def by(doc):
    return {(r['mechanism'], r['pattern'], r['msg_size']): r
            for r in doc['results'] if not r.get('skipped')}

def fig(r, what):
    if r is None:
        return None
    if what in ('p50', 'p99'):
        return r['latency_ns'] and r['latency_ns'][what]
    return r['msgs_per_sec']

def fmt(x, what):
    if what == 'msgs/s':
        return f'{x:,.0f}'
    return f'{x / 1000:.1f} µs' if x >= 1000 else f'{x:.0f} ns'

def dist(xs, what):
    xs = sorted(xs)
    return f'{fmt(st.median(xs), what)} ({fmt(xs[0], what)}..{fmt(xs[-1], what)})'

def rdist(xs):
    xs = sorted(xs)
    return f'{st.median(xs):.2f} ({xs[0]:.2f}..{xs[-1]:.2f})'

m0 = new[pairs[0]]['machine']
print(f"{len(pairs)} paired runs; machine: {m0['cpu']}, {m0['cores']} CPUs, {m0['kernel']}, clock {m0['clock']}")
print('median (min..max) over the pairs; ratios: shmbus-zc new / old within a pair,')
print('and shmbus-zc / peer within one run (same rounds), old run then new run')
keys = sorted({(p, s) for d in list(old.values()) + list(new.values())
               for (m, p, s) in by(d) if m == 'shmbus-zc'})
for p, s in keys:
    for what in (['p50', 'p99'] if p != 'throughput' else ['msgs/s']):
        o, n, ratio = [], [], []
        peer = {k: ([], []) for k in ('iceoryx2', 'crossbar-pool')}
        peer_fig = {k: [] for k in peer}
        for i in pairs:
            bo, bn = by(old[i]), by(new[i])
            zo, zn = fig(bo.get(('shmbus-zc', p, s)), what), fig(bn.get(('shmbus-zc', p, s)), what)
            if not zo or not zn:
                continue
            o.append(zo); n.append(zn); ratio.append(zn / zo)
            for k in peer:
                po, pn = fig(bo.get((k, p, s)), what), fig(bn.get((k, p, s)), what)
                if po and pn:
                    peer[k][0].append(zo / po); peer[k][1].append(zn / pn)
                    peer_fig[k] += [po, pn]
        if not o:
            continue
        print(f'\n{p} {s // 1024} KiB {what}')
        print(f'  shmbus-zc old  {dist(o, what)}')
        print(f'  shmbus-zc new  {dist(n, what)}')
        print(f'  new / old      {rdist(ratio)}')
        for k, (ro, rn) in peer.items():
            if ro:
                print(f'  {k:13}  {dist(peer_fig[k], what)}; zc / {k}: old {rdist(ro)}, new {rdist(rn)}')
