# Issue 29: where a yolo11 run's first training step goes on the GPU host. PyTorch's profiler (host side)
# over Ultralytics' own DetectionModel, one process per mode (cuDNN keeps its plans per process): forward,
# v8DetectionLoss, backward and SGD at batch 64, 640, fp16 autocast, channels_last, cudnn.benchmark off (as
# both trainers run), step 1 against step 3, ops ranked by the host time step 1 spent in them.
#   PYTHONPATH=ULTRALYTICS_SRC YOLO_OFFLINE=1 python3 bench/first_step_profile_gpu.py MODEL cudnn|direct [TOP]
# direct: depthwise convolutions run PyTorch's own kernel (cuDNN off for them), as --depthwise-kernel direct.
# pool:K: before step 1, K threads run each distinct conv of the step (shapes taken from a batch-1 forward with
# cuDNN off) forward and backward once: does cuDNN work done on other threads make the main thread's first
# step cheaper (PyTorch's plan cache is per thread, cuDNN's own kernel caches and CUDA's lazily loaded modules
# are per process)?
import sys, time, torch
from concurrent.futures import ThreadPoolExecutor
from torch.profiler import profile, ProfilerActivity
from ultralytics.nn.tasks import DetectionModel
from ultralytics.cfg import get_cfg
from ultralytics.utils.loss import v8DetectionLoss

name, mode = sys.argv[1], sys.argv[2]
top = int(sys.argv[3]) if len(sys.argv) > 3 else 15
torch.backends.cudnn.benchmark = False
B = 64
t0 = time.time()
torch.zeros(1, device='cuda')
torch.cuda.synchronize()
print(f"PROFILE {name} {mode}: CUDA context {time.time() - t0:.2f} s", flush=True)
m = DetectionModel(name + '.yaml', nc=8, verbose=False).cuda().train().to(memory_format=torch.channels_last)
if mode == 'direct':
    for mod in m.modules():
        if isinstance(mod, torch.nn.Conv2d) and mod.groups > 1 and mod.groups == mod.in_channels:
            def off_cudnn(self, x, _forward=mod.forward):
                with torch.backends.cudnn.flags(enabled=False):
                    return _forward(x)
            mod.forward = off_cudnn.__get__(mod)

def conv_configs(model):
    """Each distinct conv of a batch-B step: (input shape, weight shape, bias, stride, padding, dilation, groups)."""
    seen, hooks = {}, []
    for mod in model.modules():
        if isinstance(mod, torch.nn.Conv2d):
            def record(mod, args):
                seen[((B,) + tuple(args[0].shape[1:]), tuple(mod.weight.shape), mod.bias is not None, mod.stride,
                      mod.padding, mod.dilation, mod.groups)] = True
            hooks.append(mod.register_forward_pre_hook(record))
    with torch.no_grad(), torch.backends.cudnn.flags(enabled=False), torch.autocast('cuda', dtype=torch.float16):
        model(torch.rand(1, 3, 640, 640, device='cuda').contiguous(memory_format=torch.channels_last))
    for h in hooks:
        h.remove()
    return list(seen)

def warm_conv(cfg):
    shape, wshape, bias, stride, padding, dilation, groups = cfg
    cl = torch.channels_last
    x = torch.randn(shape, device='cuda', dtype=torch.half).contiguous(memory_format=cl).requires_grad_(shape[1] != 3)  # the image needs no dgrad
    w = torch.randn(wshape, device='cuda', dtype=torch.half).contiguous(memory_format=cl).requires_grad_()
    b = torch.zeros(wshape[0], device='cuda', dtype=torch.half, requires_grad=True) if bias else None
    torch.nn.functional.conv2d(x, w, b, stride, padding, dilation, groups).float().sum().backward()
    torch.cuda.synchronize()

if mode.startswith('pool'):
    threads = int(mode.split(':')[1]) if ':' in mode else 8
    t = time.time()
    configs = conv_configs(m)
    t_shapes = time.time() - t
    t = time.time()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(warm_conv, configs))
    print(f"PROFILE {name} {mode}: {len(configs)} distinct convs: shapes {t_shapes:.2f} s, warmed on {threads} threads "
          f"in {time.time() - t:.2f} s", flush=True)
m.args = get_cfg()
crit = v8DetectionLoss(m)
opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.937, nesterov=True, foreach=True)
scaler = torch.amp.GradScaler('cuda')
g = torch.Generator().manual_seed(0)
x = torch.rand(B, 3, 640, 640, device='cuda').contiguous(memory_format=torch.channels_last)
n = 8
batch = {'batch_idx': torch.arange(B).repeat_interleave(n).float().cuda(),
         'cls': torch.randint(0, 8, (B * n, 1), generator=g).float().cuda(),
         'bboxes': torch.cat([torch.rand(B * n, 2, generator=g) * 0.8 + 0.1, torch.rand(B * n, 2, generator=g) * 0.3 + 0.02], 1).cuda()}

def step(parts):
    t = time.time()
    with torch.autocast('cuda', dtype=torch.float16):
        out = m(x)
        torch.cuda.synchronize(); parts['forward'] = time.time() - t; t = time.time()
        loss = crit(out, batch)[0].sum()
    torch.cuda.synchronize(); parts['loss'] = time.time() - t; t = time.time()
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    torch.cuda.synchronize(); parts['backward'] = time.time() - t; t = time.time()
    scaler.step(opt); scaler.update()
    torch.cuda.synchronize(); parts['optimizer'] = time.time() - t

for k in (1, 2, 3):
    parts = {}
    if k == 1:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            step(parts)
    else:
        step(parts)
    print(f"PROFILE {name} {mode}: step {k} " + ", ".join(f"{p} {s:.3f} s" for p, s in parts.items()) +
          f" = {sum(parts.values()):.3f} s", flush=True)
    if k == 1:
        rows = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)[:top]
        for e in rows:
            print(f"PROFILE {name} {mode}: step 1 op {e.key}: self {e.self_cpu_time_total / 1e6:.3f} s in {e.count} calls",
                  flush=True)
