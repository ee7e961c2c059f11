# Issue 29: is yolo11's warm-up cuDNN building a plan for each new depthwise-conv shape? One fp16 depthwise
# 3x3 conv, forward + backward, batch 64, at seven of yolo11n's shapes: first call and steady ms, per mode.
#   python3 bench/depthwise_warmup_gpu.py cudnn|cudnn_nchw|native      (one process per mode: plans are per process)
#   python3 bench/depthwise_warmup_gpu.py cudnn_thread    (each shape's first call on another thread, then here:
#                                                          does a plan built on one thread serve another?)
#   python3 bench/depthwise_warmup_gpu.py cudnn_det       (cudnn.deterministic, as Ultralytics' default: PyTorch
#                                                          builds a plan for every engine heuristics offer and
#                                                          drops the non-deterministic ones first)
import sys, time, torch
mode = sys.argv[1]
torch.backends.cudnn.benchmark = False
torch.backends.cudnn.deterministic = mode.endswith('_det')
def run(c, h, w, b=64):
    fmt = torch.contiguous_format if mode.endswith('nchw') else torch.channels_last
    conv = torch.nn.Conv2d(c, c, 3, 1, 1, groups=c, bias=False).cuda().to(memory_format=fmt)
    x = torch.randn(b, c, h, w, device='cuda').contiguous(memory_format=fmt).requires_grad_()
    def step():
        with torch.autocast('cuda', dtype=torch.float16), torch.backends.cudnn.flags(enabled=mode.startswith('cudnn')):
            y = conv(x)
            y.float().sum().backward()
    if mode == 'cudnn_thread':
        import threading
        t = time.time(); th = threading.Thread(target=lambda: (step(), torch.cuda.synchronize())); th.start(); th.join()
        print(f"DW {mode} c{c} {h}x{w}: first on another thread {(time.time() - t)*1e3:.0f} ms", flush=True)
    torch.cuda.synchronize(); t = time.time(); step(); torch.cuda.synchronize(); first = time.time() - t
    for _ in range(3): step()
    torch.cuda.synchronize(); t = time.time()
    for _ in range(20): step()
    torch.cuda.synchronize(); steady = (time.time() - t) / 20
    return first, steady
torch.zeros(1, device='cuda'); torch.cuda.synchronize()
tot_first = tot_steady = 0
for (c, h, w) in [(64, 80, 80), (128, 40, 40), (256, 20, 20), (128, 20, 20), (64, 80, 64), (128, 40, 32), (256, 20, 16)]:
    f, s = run(c, h, w)
    tot_first += f; tot_steady += s
    print(f"DW {mode} c{c} {h}x{w}: first {f*1e3:.0f} ms, steady {s*1e3:.3f} ms", flush=True)
print(f"DW {mode} total: first {tot_first:.2f} s, steady {tot_steady*1e3:.2f} ms", flush=True)
