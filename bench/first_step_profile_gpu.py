# Issue 29: where a yolo11 run's first training step goes on the GPU host. PyTorch's profiler (host side)
# over Ultralytics' own DetectionModel, one process per mode (cuDNN keeps its plans per process): forward,
# v8DetectionLoss, backward and SGD at batch 64, 640, fp16 autocast, channels_last, cudnn.benchmark off (as
# both trainers run), step 1 against step 3, ops ranked by the host time step 1 spent in them.
#   PYTHONPATH=ULTRALYTICS_SRC YOLO_OFFLINE=1 python3 bench/first_step_profile_gpu.py MODEL cudnn|direct [TOP]
# direct: depthwise convolutions run PyTorch's own kernel (cuDNN off for them), as --depthwise-kernel direct.
import sys, time, torch
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
