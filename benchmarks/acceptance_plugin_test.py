"""The GPU acceptance run's pytest-plugin step (benchmarks/gpu_acceptance.py): one torch callable through the
roofline_check fixture, checked and held to a floor of its ceiling."""

import pytest

torch = pytest.importorskip("torch")


def test_torch_add_reaches_its_ceiling(roofline_check):
    a, b = torch.rand(2**26, device="cuda"), torch.rand(2**26, device="cuda")
    out = torch.empty_like(a)
    roofline_check(lambda: torch.add(a, b, out=out), name="torch.add", flops=a.numel(), bytes=3 * a.nbytes,
                   check=lambda: torch.equal(out, a + b), at_least=0.8)
