"""Where an in-process model is placed: one GPU per rank under `accelerate launch`."""

from coevo.llm.local import default_device


def test_cpu_when_no_gpu(monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert default_device(cuda_available=False) == "cpu"


def test_each_rank_gets_its_own_gpu(monkeypatch):
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert default_device(cuda_available=True) == "cuda:3"


def test_single_process_uses_the_default_gpu(monkeypatch):
    monkeypatch.delenv("LOCAL_RANK", raising=False)
    assert default_device(cuda_available=True) == "cuda"
