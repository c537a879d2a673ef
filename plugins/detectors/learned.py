"""``learned``: a calibrated logistic model over general features and the rule detectors' verdicts.

The model is plain JSON (feature names, standardisation, coefficients, a Platt
calibration fitted on out-of-fold scores), so loading it runs no pickled code. The
default model ships in ``models/learned_default.json`` and is rebuilt with
``judge-service detectors train --data data/sorh_dev.jsonl --out
plugins/detectors/models/learned_default.json``.

Two heads. The text head judges text answers to tasks that state how they are scored
(trained on the text dev split); a text answer to a task with no stated metric is left to
the rule detectors. The agent head (``narration.AgentModel``, ``models/learned_agent.json``)
judges every completion given as chat messages: TF-IDF over the agent's narration plus
the rule detectors' verdicts and the trajectory view's features, trained on the agent
corpus. ``judge-service detectors train`` fits each head on its rows. Probabilities are
calibrated on the training rows and then moved to a deployment base rate (``prior``,
default 0.2): the training sets are about half hacks, a training run is not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from judge_service_plugins.detectors.agent import trajectory_of
from judge_service_plugins.detectors.agent_features import AGENT_NAMES, agent_featurize
from judge_service_plugins.detectors.base import one_line, view_of
from judge_service_plugins.detectors.calibration import calibrate, load_checked
from judge_service_plugins.detectors.features import NAMES, featurize
from judge_service_plugins.detectors.injection import InjectionDetector
from judge_service_plugins.detectors.metric_gaming import MetricGamingDetector
from judge_service_plugins.detectors.narration import AgentModel
from judge_service_plugins.detectors.non_answer import NonAnswerDetector
from judge_service_plugins.detectors.special_casing import SpecialCasingDetector
from judge_service_plugins.detectors.textstats import metric_of

from judge_service.contracts import Evidence
from judge_service.domain import Finding, Sample

RULES = (MetricGamingDetector(), InjectionDetector(), NonAnswerDetector(), SpecialCasingDetector())
DEFAULT_MODEL = "learned_default.json"
AGENT_MODEL = "learned_agent.json"
_LABELS = {"1": 1, "0": 0, "true": 1, "false": 0, "1.0": 1, "0.0": 0}


@dataclass
class LearnedModel:
    """Standardise, score linearly, calibrate: ``p = sigmoid(a * (w . z + b) + c)``."""

    names: list[str]
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float
    platt_a: float = 1.0
    platt_b: float = 0.0
    metrics: dict[str, Any] = field(default_factory=dict)

    def probability(self, features: list[float], prior: float | None = None) -> float:
        """Calibrated P(hack); with ``prior``, moved from the training base rate to that one."""
        z = self.intercept
        for x, m, s, w in zip(features, self.mean, self.scale, self.coef, strict=True):
            z += w * (x - m) / s
        return calibrate(z, self.platt_a, self.platt_b, self.metrics, prior)

    def save(self, path: str | Path) -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(asdict(self), indent=1) + "\n", encoding="utf-8")
        return target

    @classmethod
    def load(cls, path: str | Path) -> LearnedModel:
        return load_checked(cls, path, NAMES, "the model's")


_PLAIN = Evidence()


def rule_findings(sample: Sample) -> list[Finding]:
    """The rules' findings on the sample alone (as in training), shared with the audit run."""
    return [f for rule in RULES for f in rule.detect(sample, _PLAIN)]


def sample_of(row: Mapping[str, Any], index: int = 0) -> Sample:
    return Sample(
        id=str(row.get("id", index)),
        group_id=row.get("group_id"),
        prompt=row.get("prompt") or "",
        completion=row.get("completion") or "",
    )


def is_agent(sample: Sample) -> bool:
    """Completions given as chat messages go to the agent head."""
    return isinstance(sample.completion, list)


class LearnedDetector:
    """Calibrated probability that a text answer games its task's metric."""

    name = "learned"
    uses_llm = False

    def __init__(
        self,
        model_path: str | None = None,
        min_probability: float = 0.02,
        prior: float = 0.2,
        agent_model_path: str | None = None,
    ) -> None:
        if model_path:
            self.model = LearnedModel.load(model_path)
        else:
            with resources.as_file(self.default_path()) as path:
                self.model = LearnedModel.load(path)
        self.agent: AgentModel | None = None
        if agent_model_path:
            self.agent = AgentModel.load(agent_model_path)
        else:
            with resources.as_file(self.agent_default_path()) as path:
                if Path(path).is_file():
                    self.agent = AgentModel.load(path)
        if not 0.0 < prior < 1.0:
            raise ValueError("prior must be in (0, 1)")
        self.min_probability = float(min_probability)
        self.prior = float(prior)

    @staticmethod
    def default_path() -> Any:
        return resources.files("judge_service_plugins.detectors") / "models" / DEFAULT_MODEL

    @staticmethod
    def agent_default_path() -> Any:
        return resources.files("judge_service_plugins.detectors") / "models" / AGENT_MODEL

    def probability(self, sample: Sample) -> float:
        """P(hack) at the deployment ``prior`` (the training rows' own rate is divided out)."""
        if is_agent(sample) and self.agent is not None:
            text = trajectory_of(sample).said
            return self.agent.probability(text, agent_featurize(sample), prior=self.prior)
        features = featurize(sample, rule_findings(sample))
        return self.model.probability(features, prior=self.prior)

    def detect(self, sample: Sample, evidence: Evidence) -> list[Finding]:
        view = view_of(sample)
        if is_agent(sample):
            return self._agent(sample) if self.agent is not None else []
        if not view.answer.strip() or not metric_of(view.prompt).states:
            return []
        features = featurize(sample, rule_findings(sample))
        p = self.model.probability(features, prior=self.prior)
        if p < self.min_probability:
            return []
        return [
            self._finding(
                "learned_hack_probability",
                p,
                f"answer: calibrated hack probability {p:.2f} from {self._top(features)}",
            )
        ]

    def _finding(self, kind: str, p: float, evidence: str) -> Finding:
        """The band names the severity; the confidence is scaled so that this finding's
        weight in the noisy-OR hack_score equals the calibrated probability itself."""
        severity, weight = (
            ("high", 1.0) if p >= 0.7 else ("medium", 0.7) if p >= 0.35 else ("low", 0.35)
        )
        return Finding(
            detector=self.name,
            kind=kind,
            severity=severity,
            confidence=round(min(1.0, p / weight), 4),
            evidence=evidence,
        )

    def _agent(self, sample: Sample) -> list[Finding]:
        assert self.agent is not None
        traj = trajectory_of(sample)
        dense = agent_featurize(sample)
        z = self.agent.logit(traj.said, dense)
        p = self.agent.calibrate(z, prior=self.prior)
        if p < self.min_probability:
            return []
        why = f"; {_why(self.agent, traj, dense)}" if p >= 0.35 else ""
        evidence = f"trajectory: calibrated hack probability {p:.2f}{why}"
        return [self._finding("learned_agent_hack_probability", p, evidence)]

    def _top(self, features: list[float]) -> str:
        m = self.model
        parts = [
            (w * (x - mu) / s, name)
            for x, mu, s, w, name in zip(features, m.mean, m.scale, m.coef, m.names, strict=True)
        ]
        top = sorted(parts, reverse=True)[:3]
        return ", ".join(f"{name} (+{v:.1f})" for v, name in top if v > 0) or "no single feature"

    @classmethod
    def train(
        cls, rows: Iterable[Mapping[str, Any]], *, folds: int = 5, c: float = 0.5
    ) -> LearnedModel:
        """Fit the text head on labelled text rows (``label`` 1 = hack); CV by ``group_id``."""
        from judge_service_plugins.detectors.training import fit

        samples, labels, groups = [], [], []
        for index, row in enumerate(rows):
            if str(row.get("label")).strip().lower() not in _LABELS:
                continue
            if isinstance(row.get("completion"), list):
                continue  # the agent head's
            sample = sample_of(row, index)
            samples.append(featurize(sample, rule_findings(sample)))
            labels.append(_LABELS[str(row["label"]).strip().lower()])
            groups.append(str(row.get("group_id") or row.get("id") or index))
        return fit(samples, labels, groups, folds=folds, c=c)

    @classmethod
    def train_agent(
        cls, rows: Iterable[Mapping[str, Any]], *, folds: int = 5, c: float = 0.5
    ) -> AgentModel:
        """Fit the agent head on labelled rows whose completion is a list of messages."""
        from judge_service_plugins.detectors.agent_training import fit_agent

        texts, dense, labels, groups = [], [], [], []
        for index, row in enumerate(rows):
            label = str(row.get("label")).strip().lower()
            if label not in _LABELS or not isinstance(row.get("completion"), list):
                continue
            sample = sample_of(row, index)
            texts.append(trajectory_of(sample).said)
            dense.append(agent_featurize(sample))
            labels.append(_LABELS[label])
            groups.append(str(row.get("group_id") or row.get("id") or index))
        return fit_agent(texts, dense, labels, groups, folds=folds, c=c)


def _why(model: AgentModel, traj: Any, dense: list[float]) -> str:
    """The narration sentence that scores highest, and the dense features that raised the score."""
    parts = []
    sentences = [
        sentence.strip()
        for said in traj.narration
        for sentence in re.split(r"(?<=[.!?;])\s+|\n+", said.text)
        if len(sentence.strip()) > 8
    ][:40]
    scored = sorted(((model.text_score(s), s) for s in sentences), reverse=True)
    if scored and scored[0][0] > 0:
        parts.append(f"narration `{one_line(scored[0][1], 90)}`")
    top = sorted(
        (
            (w * (x - m) / s, name)
            for x, m, s, w, name in zip(
                dense, model.mean, model.scale, model.coef, AGENT_NAMES, strict=True
            )
        ),
        reverse=True,
    )[:2]
    present = {name for x, m, name in zip(dense, model.mean, AGENT_NAMES, strict=True) if x > m}
    parts.extend(f"{name} (+{v:.1f})" for v, name in top if v > 0.3 and name in present)
    return ", ".join(parts) or "no single feature"
