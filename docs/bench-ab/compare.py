import json, glob, statistics as st, sys
runs = {'old': [], 'new': []}
for v in runs:
    for f in sorted(glob.glob(f'{v}-*.json')):
        runs[v].append(json.load(open(f)))
def key(r): return (r['pattern'], r['msg_size'], r['receivers'])
def figures(doc):
    by = {}
    for r in doc['results']:
        if r.get('skipped'): continue
        by[(r['mechanism'],) + key(r)] = r
    out = {}
    for (m, p, s, n), r in by.items():
        if m not in ('shmbus', 'shmbus-zc', 'shmbus-stream'): continue
        if p == 'pingpong':
            fl = by.get(('floor', p, s, n)) or by.get(('floor', p, 64, n))
            if fl and r['latency_ns'] and fl['latency_ns']:
                out[(m, p, s, n, 'p50 / floor p50')] = r['latency_ns']['p50'] / fl['latency_ns']['p50']
            rf = by.get(('ringfire', p, s, n))
            if rf and r['latency_ns'] and rf['latency_ns']:
                out[(m, p, s, n, 'p50 / ringfire p50')] = r['latency_ns']['p50'] / rf['latency_ns']['p50']
        elif p == 'fanout':
            w = r.get('worst_receiver_ns') or r.get('latency_ns')
            rf = by.get(('ringfire', p, s, n))
            rw = rf and (rf.get('worst_receiver_ns') or rf.get('latency_ns'))
            if w and rw:
                out[(m, p, s, n, 'worst p50 / ringfire')] = w['p50'] / rw['p50']
        elif p == 'throughput':
            rf = by.get(('ringfire', p, s, n))
            if r['msgs_per_sec'] and rf and rf['msgs_per_sec']:
                out[(m, p, s, n, 'msgs/s / ringfire msgs/s')] = r['msgs_per_sec'] / rf['msgs_per_sec']
    return out
old = [figures(d) for d in runs['old']]; new = [figures(d) for d in runs['new']]
keys = sorted(set().union(*old, *new))
print(f"{len(old)} runs before, {len(new)} after; machine: {runs['new'][0]['machine']['cpu']}, {runs['new'][0]['machine']['cores']} CPUs")
print(f"{'case':58} {'before median (min..max)':30} {'after median (min..max)':30} verdict")
worse = 0
for k in keys:
    a = [o[k] for o in old if k in o]; b = [n[k] for n in new if k in n]
    if not a or not b: continue
    lower_better = 'msgs/s' not in k[4]
    ma, mb = st.median(a), st.median(b)
    # Worse: the after median lies outside the before runs' range, on the
    # worse side.
    out_of_range = mb > max(a) if lower_better else mb < min(a)
    delta = (mb - ma) if lower_better else (ma - mb)
    verdict = 'worse, outside the before range' if out_of_range else 'within the before range' if delta > 0 else 'same or better'
    worse += out_of_range
    name = f"{k[0]} {k[1]} {k[2]} B x{k[3]} {k[4]}"
    print(f"{name:58} {ma:6.2f} ({min(a):.2f}..{max(a):.2f}){'':12} {mb:6.2f} ({min(b):.2f}..{max(b):.2f}){'':12} {verdict}")
print(f"after medians outside the before range, on the worse side: {worse}")
