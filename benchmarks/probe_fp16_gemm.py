import cupy as cp, torch, statistics
def t(fn, r=20):
    for _ in range(3): fn()
    cp.cuda.Device().synchronize()
    ts=[]
    for _ in range(r):
        s,e=cp.cuda.Event(),cp.cuda.Event(); s.record(); fn(); e.record(); e.synchronize(); ts.append(cp.cuda.get_elapsed_time(s,e)*1e-3)
    return statistics.median(ts)
N=8192; F=2*N**3
a=cp.random.standard_normal((N,N),dtype=cp.float32).astype(cp.float16); b=cp.random.standard_normal((N,N),dtype=cp.float32).astype(cp.float16); c=cp.empty((N,N),cp.float16)
print('cupy fp16 randn', F/t(lambda: cp.matmul(a,b,out=c))/1e12)
u=cp.random.uniform(-1,1,(N,N),dtype=cp.float32); a2=(cp.copysign(0.25+0.75*cp.abs(u),u)).astype(cp.float16); u=cp.random.uniform(-1,1,(N,N),dtype=cp.float32); b2=(cp.copysign(0.25+0.75*cp.abs(u),u)/N**0.5).astype(cp.float16)
print('cupy fp16 roofline inputs', F/t(lambda: cp.matmul(a2,b2,out=c))/1e12)
ta=torch.randn(N,N,device='cuda',dtype=torch.float16); tb=torch.randn(N,N,device='cuda',dtype=torch.float16)
print('torch fp16 randn', F/t(lambda: torch.matmul(ta,tb))/1e12)
