#!/usr/bin/env python3
"""Checks the quality benchmark's shared code: the metrics on cases worked out by hand, the input
normalization, and the regenerated weights, whose bits must never change (the committed
skeletons in bench/quality/models are rebuilt from them and checked by SHA-256)."""
import hashlib
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import quality_common as qc  # noqa: E402


def one_hot_path(path, classes=8):
    probs = np.full((1, len(path), classes), 0.01, dtype=np.float32)
    for t, c in enumerate(path):
        probs[0, t, c] = 0.9
    return probs


class Metrics(unittest.TestCase):
    def test_sqnr_is_signal_over_noise_over_all_samples(self):
        ref = [np.ones(100, np.float32), np.ones(100, np.float32)]
        act = [np.ones(100, np.float32) + 0.1, np.ones(100, np.float32)]
        # signal 200, noise 100 * 0.01 = 1: 10 log10(200)
        self.assertAlmostEqual(qc.sqnr_db(ref, act), 10 * np.log10(200.0), places=4)
        self.assertEqual(qc.sqnr_db(ref, ref), float("inf"))

    def test_cosine_is_the_mean_over_samples(self):
        ref = [np.array([1.0, 0.0]), np.array([1.0, 0.0])]
        act = [np.array([0.0, 1.0]), np.array([2.0, 0.0])]
        self.assertAlmostEqual(qc.cosine(ref, act), 0.5)

    def test_ctc_greedy_merges_repeats_and_drops_blanks(self):
        self.assertEqual(qc.ctc_greedy(one_hot_path([0, 5, 5, 0, 5, 7, 7, 0])), [5, 5, 7])
        self.assertEqual(qc.ctc_greedy(one_hot_path([0, 0, 0])), [])

    def test_recognizer_agreement_counts_equal_sequences(self):
        ref = [one_hot_path([0, 3, 3, 4]), one_hot_path([2, 0, 2])]
        act = [one_hot_path([3, 0, 0, 4]), one_hot_path([2, 2, 2])]  # same [3, 4]; [2] != [2, 2]
        self.assertEqual(qc.task_metric("recognizer", ref, act), 50.0)

    def test_detector_iou_uses_the_dbnet_threshold(self):
        ref = [np.array([[0.9, 0.9, 0.1, 0.1]])]
        act = [np.array([[0.9, 0.2, 0.31, 0.1]])]  # intersection 1, union 3
        self.assertAlmostEqual(qc.task_metric("detector", ref, act), 100.0 / 3)
        self.assertEqual(qc.task_metric("detector", [np.zeros((2, 2))], [np.zeros((2, 2))]), 100.0)

    def test_classifier_and_lm_agreement(self):
        ref = [np.array([[0.1, 0.9]]), np.array([[0.8, 0.2]])]
        act = [np.array([[0.2, 0.8]]), np.array([[0.4, 0.6]])]
        self.assertEqual(qc.task_metric("classifier", ref, act), 50.0)
        lm_ref = [np.array([[[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 0.0]]])]
        lm_act = [np.array([[[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0]]])]
        self.assertEqual(qc.task_metric("lm", lm_ref, lm_act), 75.0)

    def test_clear_agreement_leaves_out_near_ties_of_fp32(self):
        # Recognizer: the second line has a step where FP32 is at 0.52 / 0.48: not clear.
        tie = np.array([[[0.52, 0.48, 0.0], [0.0, 0.0, 1.0]]])
        ref = [one_hot_path([0, 1, 2]), tie, one_hot_path([2, 0])]
        act = [one_hot_path([0, 1, 2]), one_hot_path([1, 2]), one_hot_path([1, 0])]
        self.assertAlmostEqual(qc.task_metric("recognizer", ref, act), 100.0 / 3)
        self.assertEqual(qc.clear_agreement("recognizer", ref, act), (50.0, 2, 3))
        # Classifier logits go through a softmax: [0, 0.1] is a near tie, [0, 5] is clear.
        logits = [np.array([[0.0, 0.1]]), np.array([[0.0, 5.0]])]
        flipped = [np.array([[0.1, 0.0]]), np.array([[0.0, 4.0]])]
        self.assertEqual(qc.clear_agreement("classifier", logits, flipped), (100.0, 1, 2))
        # Language model: positions count one by one.
        lm_ref = [np.array([[[9.0, 0.0], [0.0, 0.05], [0.0, 9.0]]])]
        lm_act = [np.array([[[0.0, 9.0], [0.05, 0.0], [0.0, 9.0]]])]
        self.assertEqual(qc.clear_agreement("lm", lm_ref, lm_act), (50.0, 2, 3))
        # The detector has no decision margin: nothing is reported.
        self.assertEqual(qc.clear_agreement("detector", [np.zeros((2, 2))], [np.zeros((2, 2))]),
                         (None, 0, 0))
        self.assertNotIn("task_clear", qc.score("ppocr-v4-det", [np.zeros((2, 2))], [np.zeros((2, 2))]))

    def test_pre_activation_sqnr_is_compared_where_both_rows_have_it(self):
        a = {"sqnr_db": 40.0, "pre_sqnr_db": 28.0}
        b = {"sqnr_db": 45.0, "pre_sqnr_db": 24.0}
        self.assertEqual(qc.compared_sqnr(a, b), (28.0, 24.0, "pre-activation"))
        self.assertEqual(qc.compared_sqnr(a, {"sqnr_db": 45.0}), (40.0, 45.0, "output"))
        ref, act = [np.ones(4)], [np.ones(4) * 1.1]
        self.assertNotIn("pre_sqnr_db", qc.score("ppocr-mobile-cls", ref, act))
        self.assertAlmostEqual(qc.score("ppocr-mobile-cls", ref, act, ref, act)["pre_sqnr_db"], 20.0)

    def test_pre_activation_is_the_softmax_input_seen_through_qdq(self):
        import tempfile

        import onnx
        from onnx import TensorProto, helper

        def model(tail):
            nodes = [helper.make_node("MatMul", ["x", "w"], ["logits"])] + tail
            graph = helper.make_graph(
                nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                [helper.make_tensor_value_info(nodes[-1].output[0], TensorProto.FLOAT, [1, 2])],
                [helper.make_tensor("w", TensorProto.FLOAT, [2, 2], [1, 0, 0, 1]),
                 helper.make_tensor("s", TensorProto.FLOAT, [], [0.01]),
                 helper.make_tensor("z", TensorProto.UINT8, [], [0])])
            return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])

        qdq = [helper.make_node("Softmax", ["logits"], ["p"]),
               helper.make_node("QuantizeLinear", ["p", "s", "z"], ["q"]),
               helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
        self.assertEqual(qc.preactivation_of(model(qdq).graph), "logits")
        view = [helper.make_node("Flatten", ["logits"], ["flat"]),
                helper.make_node("Softmax", ["flat"], ["p"]),
                helper.make_node("Identity", ["p"], ["y"])]
        self.assertEqual(qc.preactivation_of(model(view).graph), "flat")
        self.assertIsNone(qc.preactivation_of(model([helper.make_node("Relu", ["logits"], ["y"])]).graph))
        with tempfile.TemporaryDirectory() as d:
            src, dst = os.path.join(d, "m.onnx"), os.path.join(d, "pre.onnx")
            onnx.save(model([helper.make_node("Sigmoid", ["logits"], ["y"])]), src)
            self.assertEqual(qc.with_preactivation_output(src, dst), "logits")
            self.assertEqual([o.name for o in onnx.load(dst).graph.output], ["y", "logits"])
            onnx.save(model([helper.make_node("Relu", ["logits"], ["y"])]), src)
            self.assertIsNone(qc.with_preactivation_output(src, os.path.join(d, "none.onnx")))
            self.assertFalse(os.path.exists(os.path.join(d, "none.onnx")))

    def test_digests_compare_sums_and_labels(self):
        ref = [np.array([[0.1, 0.9]]), np.array([[0.8, 0.2]])]
        near = [r * (1 + 1e-7) for r in ref]
        c = qc.compare_digests("ppocr-mobile-cls", qc.fp32_digest("ppocr-mobile-cls", ref),
                               qc.fp32_digest("ppocr-mobile-cls", near))
        self.assertLess(c["max_rel_diff"], 1e-6)
        self.assertEqual(c["labels_equal"], 2)


class Inputs(unittest.TestCase):
    def test_paddleocr_rec_normalization(self):
        raw = np.zeros((3, 48, 320), np.uint8)
        raw[:, 0, 0] = 255
        x = qc.model_input("ppocr-v4-rec", raw)
        self.assertEqual(x.shape, (1, 3, 48, 320))
        self.assertEqual(x.dtype, np.float32)
        self.assertEqual(x[0, 0, 0, 0], 1.0)
        self.assertEqual(x[0, 0, 1, 1], -1.0)

    def test_imagenet_normalization_per_channel(self):
        raw = np.full((3, 320, 320), 255, np.uint8)
        x = qc.model_input("ppocr-v4-det", raw)
        for c in range(3):
            want = np.float32((1.0 - qc.IMAGENET_MEAN[c]) / qc.IMAGENET_STD[c])
            self.assertEqual(x[0, c, 5, 5], want)

    def test_token_ids_stay_int64(self):
        ids = np.arange(128, dtype=np.int64).reshape(1, 128)
        self.assertTrue(np.array_equal(qc.model_input("gpt2", ids), ids))


class RegeneratedWeights(unittest.TestCase):
    def test_known_bits(self):
        # The bits the exporting machine produced; a change here invalidates every skeleton.
        got = qc.regenerated_values("w", 8, 0.0, 0.02).view(np.uint32)
        self.assertEqual([int(x) for x in got],
                         [0x3C054B8E, 0xBC9DAA9C, 0xBC920D87, 0xBC192BEF,
                          0x3C0FDBF1, 0x3C453B58, 0x3CF1F3ED, 0xBB0561B1])
        got = qc.regenerated_values("transformer.h.0.attn.c_attn.weight", 4, 0.5, 2.0).view(np.uint32)
        self.assertEqual([int(x) for x in got], [0x3F83092B, 0x3E0985C5, 0x3F046D34, 0x3FDE55E4])

    def test_known_digest_of_a_million_values(self):
        values = qc.regenerated_values("transformer.wte.weight", 1 << 20, 0.0, 0.02)
        self.assertEqual(hashlib.sha256(values.tobytes()).hexdigest(),
                         "3c94ef9453dc21311ff59d163ad69e26f6833bf9d0fc549d4a706774140de099")

    def test_values_do_not_depend_on_chunking(self):
        n = qc._CHUNK + 5
        long = qc.regenerated_values("x", n, 1.0, 3.0)
        self.assertTrue(np.array_equal(long[:16], qc.regenerated_values("x", 16, 1.0, 3.0)))
        self.assertTrue(np.array_equal(long[: qc._CHUNK + 1][-8:], qc.regenerated_values("x", qc._CHUNK + 1, 1.0, 3.0)[-8:]))

    def test_mean_and_std_follow_the_spec(self):
        v = qc.regenerated_values("y", 1 << 20, -0.25, 0.5).astype(np.float64)
        self.assertAlmostEqual(v.mean(), -0.25, delta=0.005)
        self.assertAlmostEqual(v.std(), 0.5, delta=0.005)
        self.assertLessEqual(np.abs(v + 0.25).max(), 2 * 1.7320508075688772 * 0.5)
        self.assertTrue(np.all(qc.regenerated_values("z", 10, 3.5, 0.0) == np.float32(3.5)))

    def test_names_give_different_streams(self):
        self.assertFalse(np.array_equal(qc.regenerated_values("a", 64, 0, 1),
                                        qc.regenerated_values("b", 64, 0, 1)))


class Builds(unittest.TestCase):
    """results.md names, per build, the rows whose latest run it made (run_quality.py)."""

    def test_a_build_that_runs_again_moves_to_the_end(self):
        import run_quality as rq
        meta = {}
        for source in (("aaa1111", "first"), ("bbb2222", "second"), ("aaa1111", "first")):
            rq.remember_build(meta, source)
        self.assertEqual([b["commit"] for b in meta["builds"]], ["bbb2222", "aaa1111"])

    def test_rows_are_listed_under_their_latest_build_newest_first(self):
        import run_quality as rq
        results = {
            "m1": {"methods": {"qopt-a": {}, "qopt-b": {}, "ort-x": {}}},
            "m2": {"methods": {"qopt-a": {}, "qopt-b": {}}},
        }
        old = {"commit": "old0000", "subject": "older build"}
        new = {"commit": "new0000", "subject": "x" * 150}
        for r in results.values():
            rq.tag_rows(r, ("old0000", "older build"))
        rq.tag_rows({"methods": {"qopt-b": results["m1"]["methods"]["qopt-b"]}}, ("new0000", ""))
        self.assertNotIn("build", results["m1"]["methods"]["ort-x"])
        lines = rq.builds_lines(results, [old, new])
        self.assertEqual(len(lines), 2)
        self.assertTrue(lines[0].startswith("- `new0000` "))
        self.assertIn(": m1 (qopt-b)", lines[0])
        self.assertLess(len(lines[0]), 150)  # the subject is shortened
        self.assertEqual(lines[1], "- `old0000` older build: m1 (qopt-a); m2 (every qopt row)")


class Goals(unittest.TestCase):
    """The goal lines judge the trained models and report the random-weight exports beside them."""

    def test_random_weight_models_are_reported_not_judged(self):
        import run_quality as rq

        def row(tool, task, sqnr):
            return {"status": "ok", "tool": tool, "family": "int8", "task": task, "sqnr_db": sqnr}

        results = {
            "ppocr-v4-rec": {"methods": {rq.DEFAULT_METHOD: row("qopt", 90.0, 20.0),
                                         "ort-trt": row("onnxruntime", 60.0, 9.0)}},
            "gpt2": {"methods": {rq.DEFAULT_METHOD: row("qopt", 84.0, 23.0),
                                 "ort-trt": row("onnxruntime", 85.0, 23.0)}},
        }
        lines = rq.goals(results)
        self.assertIn("PASS: ppocr-v4-rec: qopt default (qopt-trt-int8)", "\n".join(lines))
        self.assertIn("FAIL: ppocr-v4-rec: qopt default task agreement 90.00 %", "\n".join(lines))
        gpt2 = [g for g in lines if ": gpt2: qopt default" in g]
        self.assertEqual(len(gpt2), 2)
        for g in gpt2:
            self.assertTrue(g.startswith("FAIL (random weights: reported, not judged): gpt2:"), g)


if __name__ == "__main__":
    unittest.main()
