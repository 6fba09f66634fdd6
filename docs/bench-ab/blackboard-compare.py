"""Summarises blackboard-run.sh: per binary, over its runs, the median
(and each run's figure) of shmbus's write and read through a handle, in
ns and over ringfire's in the same rounds, and of an update through
handles seen on the other core, over the floor's and ringfire's in the
same rounds. Run in the directory of NAME-N.json."""
import collections, glob, json, os, re


def med(v):
    v = sorted(v)
    return v[len(v) // 2]


def row(rnd, name):
    return next(x for x in rnd if x['name'] == name)


out = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob('*-*.json')):
    m = re.match(r'(.+)-(\d+)\.json$', os.path.basename(f))
    if not m:
        continue
    d = json.load(open(f))['blackboard']
    w, r, wn, rn = [], [], [], []
    for rnd in d['op_rounds']:
        a, b = row(rnd, 'shmbus-entry'), row(rnd, 'ringfire')
        w.append(a['write_ns'] / b['write_ns'])
        r.append(a['read_ns'] / b['read_ns'])
        wn.append(a['write_ns'])
        rn.append(a['read_ns'])
    vf, vr, vn = [], [], []
    for x in d['visible_rounds']:
        vf.append(x['shmbus_entry_ns'] / x['floor_ns'])
        vr.append(x['shmbus_entry_ns'] / x['ringfire_ns'])
        vn.append(x['shmbus_entry_ns'])
    o = out[m.group(1)]
    for k, xs in [('write ns', wn), ('read ns', rn), ('write / ringfire', w),
                  ('read / ringfire', r), ('visible ns', vn),
                  ('visible / floor', vf), ('visible / ringfire', vr)]:
        o[k].append(med(xs))
order = os.environ.get('VARIANTS', ' '.join(sorted(out))).split()
for v in order:
    if v not in out:
        continue
    print(f"{v} ({len(out[v]['write ns'])} runs; median of each run's rounds, then over runs)")
    for k, xs in out[v].items():
        print(f'  {k:<20} {med(xs):7.3f}   runs ' + ' '.join(f'{x:.3f}' for x in xs))
