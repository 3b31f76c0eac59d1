"""Write core/palinode_core/search/minilm.onnx: all-MiniLM-L6-v2 as an ONNX graph
with no weights in it (they are read from weights.bin beside it, the packaged
safetensors tensors at the offsets of ``minilm.layout()``). Needs the ``onnx``
package (a dev dependency); run after changing the graph or the layout, and
tests/core/test_embed.py checks the shipped file is what this writes:

    .venv/bin/python tools/minilm_graph.py

The graph is BertModel's forward pass as transformers computes it for one
sentence (token types all 0, absolute positions, additive attention mask, exact
GELU, LayerNorm eps 1e-12), then sentence-transformers' mean pooling over the
attention mask and its L2 normalisation. Inputs: input_ids and attention_mask
(int64, batch x tokens); output: embedding (float32, batch x 384).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto
from onnx import helper as h

from palinode_core.search import minilm

OPSET = 20  # Gelu and LayerNormalization are standard operators from here
IR_VERSION = 9  # ONNX Runtime 1.15 and later


def graph() -> onnx.ModelProto:
    inits: list[TensorProto] = []
    nodes: list[onnx.NodeProto] = []
    for name, shape, offset, length in minilm.layout():
        tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=shape)
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", minilm.WEIGHTS), ("offset", str(offset)), ("length", str(length))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
        inits.append(tensor)

    def const(name: str, value: np.ndarray) -> str:
        inits.append(onnx.numpy_helper.from_array(value, name))
        return name

    def node(op: str, inputs: list[str], out: str, **attrs: object) -> str:
        nodes.append(h.make_node(op, inputs, [out], name=out, **attrs))
        return out

    hidden, heads = minilm.HIDDEN, minilm.HEADS
    const("axis0", np.array([0], np.int64))
    const("axis1", np.array([1], np.int64))
    const("axis2", np.array([2], np.int64))
    const("mask_axes", np.array([1, 2], np.int64))
    const("head_dims", np.array([heads, hidden // heads], np.int64))
    const("hidden_dim", np.array([hidden], np.int64))
    const("rows", np.array([-1, hidden], np.int64))
    const("type0", np.array([0], np.int64))
    const("scale", np.array(1 / np.sqrt(hidden // heads), np.float32))
    const("one", np.array(1.0, np.float32))
    const("masked", np.array(-1e9, np.float32))  # exp underflows to exactly 0, as transformers' mask does
    const("count_floor", np.array(1e-9, np.float32))  # sentence-transformers' clamp of the token count
    const("norm_floor", np.array(1e-12, np.float32))  # torch.nn.functional.normalize's eps

    node("Shape", ["input_ids"], "batch_tokens")
    node("Slice", ["batch_tokens", "axis1", "axis2", "axis0"], "tokens")
    node("Concat", ["batch_tokens", "head_dims"], "split_heads", axis=0)
    node("Concat", ["batch_tokens", "hidden_dim"], "per_token", axis=0)
    node("Gather", ["embeddings.word_embeddings.weight", "input_ids"], "words")
    node("Gather", ["embeddings.token_type_embeddings.weight", "type0"], "type")
    node("Slice", ["embeddings.position_embeddings.weight", "axis0", "tokens", "axis0"], "positions")
    node("Add", ["words", "type"], "typed")
    node("Add", ["typed", "positions"], "embedded")
    node(
        "LayerNormalization",
        ["embedded", "embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias"],
        "normed",
        axis=-1,
        epsilon=minilm.EPS,
    )
    x = node("Reshape", ["normed", "rows"], "h0")  # (batch * tokens, hidden) between attentions
    node("Cast", ["attention_mask"], "maskf", to=TensorProto.FLOAT)
    node("Sub", ["one", "maskf"], "padding")
    node("Mul", ["padding", "masked"], "bias2")
    node("Unsqueeze", ["bias2", "mask_axes"], "attention_bias")  # (batch, 1, 1, tokens)
    for i in range(minilm.LAYERS):
        p = f"encoder.layer.{i}."

        def linear(inp: str, module: str, out: str, p: str = p) -> str:
            return node("Gemm", [inp, f"{p}{module}.weight", f"{p}{module}.bias"], out, transB=1)

        def heads_of(inp: str, out: str, perm: list[int]) -> str:
            return node("Transpose", [node("Reshape", [inp, "split_heads"], out + "_split")], out, perm=perm)

        q = heads_of(linear(x, "attention.self.query", f"q{i}"), f"qh{i}", [0, 2, 1, 3])
        k = heads_of(linear(x, "attention.self.key", f"k{i}"), f"kh{i}", [0, 2, 3, 1])
        v = heads_of(linear(x, "attention.self.value", f"v{i}"), f"vh{i}", [0, 2, 1, 3])
        scores = node("Mul", [node("MatMul", [q, k], f"qk{i}"), "scale"], f"scaled{i}")
        probs = node("Softmax", [node("Add", [scores, "attention_bias"], f"masked{i}")], f"probs{i}", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, v], f"ctx{i}")], f"ctx_t{i}", perm=[0, 2, 1, 3])
        context = node("Reshape", [context, "rows"], f"ctx_rows{i}")
        attended = node("Add", [linear(context, "attention.output.dense", f"attn{i}"), x], f"attn_res{i}")
        x1 = node(
            "LayerNormalization",
            [attended, f"{p}attention.output.LayerNorm.weight", f"{p}attention.output.LayerNorm.bias"],
            f"attn_norm{i}",
            axis=-1,
            epsilon=minilm.EPS,
        )
        inner = node("Gelu", [linear(x1, "intermediate.dense", f"inter{i}")], f"gelu{i}")
        out = node("Add", [linear(inner, "output.dense", f"out{i}"), x1], f"out_res{i}")
        x = node(
            "LayerNormalization",
            [out, f"{p}output.LayerNorm.weight", f"{p}output.LayerNorm.bias"],
            f"h{i + 1}",
            axis=-1,
            epsilon=minilm.EPS,
        )
    node("Reshape", [x, "per_token"], "last_hidden")
    node("Unsqueeze", ["maskf", "axis2"], "mask3")
    node("Mul", ["last_hidden", "mask3"], "kept")
    node("ReduceSum", ["kept", "axis1"], "summed", keepdims=0)
    node("ReduceSum", ["mask3", "axis1"], "count", keepdims=0)
    node("Max", ["count", "count_floor"], "count_clamped")
    node("Div", ["summed", "count_clamped"], "mean")
    node("Mul", ["mean", "mean"], "squares")
    node("ReduceSum", ["squares", "axis1"], "square_sum", keepdims=1)
    node("Sqrt", ["square_sum"], "norm")
    node("Max", ["norm", "norm_floor"], "norm_clamped")
    node("Div", ["mean", "norm_clamped"], "embedding")
    model = h.make_model(
        h.make_graph(
            nodes,
            minilm.NAME,
            [
                h.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
                h.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
            ],
            [
                h.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", hidden]),
                h.make_tensor_value_info("last_hidden", TensorProto.FLOAT, ["batch", "tokens", hidden]),
            ],
            initializer=inits,
        ),
        opset_imports=[h.make_opsetid("", OPSET)],
        producer_name="palinode-tui tools/minilm_graph.py",
    )
    model.ir_version = IR_VERSION  # (onnx.checker would look for weights.bin: ONNX Runtime checks it on load)
    return model


def main() -> None:
    minilm.GRAPH.write_bytes(graph().SerializeToString())
    print(f"wrote {minilm.GRAPH} ({minilm.GRAPH.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
