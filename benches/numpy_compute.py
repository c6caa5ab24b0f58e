# NumPy peer timings for benches/compute.rs and examples/timing.rs: min and median of N runs,
# operands evicted from the caches before each timing. Run: python3 benches/numpy_compute.py [N]
import numpy as np, time, sys
N=1<<24
a=np.random.rand(N).astype(np.float32); b=np.random.rand(N).astype(np.float32)
c=np.empty_like(a)
m=np.random.rand(4096,4096).astype(np.float32); col=np.random.rand(4096,1).astype(np.float32)
h1=a.astype(np.float16); h2=b.astype(np.float16)
flush=np.ones(512<<20, dtype=np.uint8)
cases=[("np add f32 16M new", lambda: a+b), ("np add f32 16M existing", lambda: np.add(a,b,out=c)),
 ("np add [4096,4096]+[4096,1] new", lambda: m+col), ("np sum last dim", lambda: m.sum(axis=1)),
 ("np sum first dim", lambda: m.sum(axis=0)), ("np sum all", lambda: m.sum()), ("np add f16 16M new", lambda: h1+h2)]
reps=int(sys.argv[1]) if len(sys.argv)>1 else 15
ts=[[] for _ in cases]
for r in range(reps):
    for k,(n,f) in enumerate(cases):
        flush[::64].sum()
        s=time.perf_counter(); f(); ts[k].append((time.perf_counter()-s)*1e3)
for (n,_),t in zip(cases,ts):
    t.sort(); print(f"{n:45s} min {t[0]:7.2f} ms   median {t[len(t)//2]:7.2f} ms")
