"""The per-record writers of results: metric runs, noise samples and scores, judge runs,
responses, verdicts and Batch API submissions (a mixin of `RecordWriter`, which resolves the
keys they refer to; a new run, response, verdict or submission keeps the record's `created_at`)."""
from __future__ import annotations

from sqlalchemy import select

from db import models as m
from db.importer.accounts import record_time
from db.importer.errors import Reject


class ResultWriters:
    """`_write_<type>` for the result record types; needs RecordWriter's key resolution."""

    def judge_run_id(self, signature: str) -> int:
        """The id of the judge run with this signature, stored or written by this import
        (Reject when there is none)."""
        return self._run_id(self._judge_runs, m.JudgeRun, signature)

    def _write_metric_run(self, rec):
        values = {k: v for k, v in rec.items() if k not in ("type", "signature", "created_at")}
        for name, allowed in (("context", m.CONTEXT_VARIANTS), ("noise", m.NOISE_KINDS)):
            if name in values and values[name] not in allowed:
                raise Reject(f"expected one of {', '.join(allowed)}, got {values[name]!r}", name)
        if values.get("params") is None:
            values.pop("params", None)
        if values.get("library_versions") is None:
            values.pop("library_versions", None)
        row, outcome = self._upsert(m.MetricRun, {"signature": rec["signature"]}, values,
                                    rec.get("created_at"))
        self._metric_runs[rec["signature"]] = row.id
        return outcome

    def _noise_sample_id(self, rec: dict, noise: dict) -> int:
        found = self.session.execute(select(m.NoiseSample.id).filter_by(
            target_id=self.target_id(rec), kind=noise["kind"], tokenizer=noise["tokenizer"],
            seed=noise["seed"])).scalars().first()
        if found is None:
            raise Reject(f"no noise sample {noise} for that target (a 'noise_sample' record must "
                          f"come first)", "noise")
        return found

    def _write_noise_sample(self, rec):
        if rec["kind"] not in ("uniform", "targeted"):
            raise Reject(f"expected uniform or targeted, got {rec['kind']!r}", "kind")
        key = {"target_id": self.target_id(rec), "kind": rec["kind"],
               "tokenizer": rec["tokenizer"], "seed": rec["seed"]}
        return self._upsert(m.NoiseSample, key, {"text": rec.get("text", "")})[1]

    def _write_metric_score(self, rec):
        run_id = self._run_id(self._metric_runs, m.MetricRun, rec["run"])
        if rec.get("model") is not None:
            key = {"run_id": run_id, "generation_id": self.generation_id(rec)}
        else:
            key = {"run_id": run_id, "noise_sample_id": self._noise_sample_id(rec, rec["noise"])}
        values = {k: rec[k] for k in ("precision", "recall", "f", "error") if k in rec}
        if rec.get("details") is not None:
            values["details"] = rec["details"]
        return self._upsert(m.MetricScore, key, values)[1]

    def _write_judge_run(self, rec):
        # a built-in strategy or a prompt template's name (judges.run --template)
        if not isinstance(rec["strategy"], str) or not rec["strategy"].strip():
            raise Reject(f"expected a strategy name ({', '.join(m.JUDGE_STRATEGIES)} or a "
                         f"template's), got {rec['strategy']!r}", "strategy")
        values = {k: v for k, v in rec.items() if k not in ("type", "signature", "created_at")}
        if values.get("params") is None:
            values.pop("params", None)
        row, outcome = self._upsert(m.JudgeRun, {"signature": rec["signature"]}, values,
                                    rec.get("created_at"))
        self._judge_runs[rec["signature"]] = row.id
        return outcome

    def _status(self, rec):
        if rec["status"] not in m.JUDGE_STATUSES:
            raise Reject(f"expected one of {', '.join(m.JUDGE_STATUSES)}, got "
                          f"{rec['status']!r}", "status")

    def _write_judge_response(self, rec):
        self._status(rec)
        key = {"run_id": self.judge_run_id(rec["run"]),
               "target_id": self.target_id(rec), "cluster": rec.get("cluster", "")}
        values = {k: rec[k] for k in ("status", "raw_response", "error", "prompt_tokens",
                                      "completion_tokens", "latency_s", "cached") if k in rec}
        for name in ("order", "repairs"):
            if rec.get(name) is not None:
                values[name] = rec[name]
        return self._upsert(m.JudgeResponse, key, values, rec.get("created_at"))[1]

    def _write_judge_verdict(self, rec):
        self._status(rec)
        codes = rec.get("codes") or []
        if not isinstance(codes, list):
            raise Reject("expected a list of {code, confidence, justification}", "codes")
        self._codes([c["code"] if isinstance(c, dict) and "code" in c else c for c in codes])
        key = {"run_id": self.judge_run_id(rec["run"]),
               "generation_id": self.generation_id(rec)}
        values = {"status": rec["status"], "accuracy": self._accuracy(rec.get("accuracy")),
                  "codes": codes}
        if "position" in rec:
            values["position"] = rec["position"]
        return self._upsert(m.JudgeVerdict, key, values, rec.get("created_at"))[1]

    def _write_judge_batch(self, rec):
        requests = rec.get("requests") or {}
        if not isinstance(requests, dict):
            raise Reject("expected {custom_id: {target, key, format}}", "requests")
        stored = {}
        for custom_id, request in requests.items():
            if not isinstance(request, dict) or not isinstance(request.get("target"), dict):
                raise Reject(f"request {custom_id!r}: expected a 'target' key", "requests")
            rest = {k: v for k, v in request.items() if k != "target"}
            stored[custom_id] = {"target_id": self.target_id(request["target"]), **rest}
        values = {"run_id": self.judge_run_id(rec["run"]),
                  "status": rec["status"], "requests": stored, "counts": rec.get("counts") or {},
                  **{k: rec.get(k) for k in ("batch_id", "input_file_id", "output_file_id",
                                             "error_file_id", "error")}}
        if rec.get("finished_at") is not None:
            values["finished_at"] = record_time(rec["finished_at"], "finished_at")
        return self._upsert(m.JudgeBatch, {"submission": rec["submission"]}, values,
                            rec.get("created_at"))[1]
