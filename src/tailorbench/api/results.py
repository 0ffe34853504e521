"""Typed results of the Python API: pydantic models of the JSON each verb writes or prints, by concern:
`output_base` (the base `Output`, `RunOutput`, `returning`), `output_runs` (results.json of each run kind,
leaderboard.json, compare), `output_verbs` (agreement, tiers, estimates, training, build, data, cache, batches),
`output_stages` (`tb.stages.*`) and `output_people` (`tb.annotate.*`, `tb.study.*`). This module names them all.

A model of a printed object keeps its fields exactly (`extra="allow"`) and declares the ones a caller reads most,
typed. The run files one verb writes and another reads (results.json, leaderboard.json) are the run log's models
(`tailorbench.runlog`): read strictly, every field typed and no other key.
"""

from __future__ import annotations

from tailorbench.api.output_base import (
    Output as Output,
)
from tailorbench.api.output_base import (
    RunOutput as RunOutput,
)
from tailorbench.api.output_base import (
    returning as returning,
)
from tailorbench.api.output_people import (
    AnnotationExport as AnnotationExport,
)
from tailorbench.api.output_people import (
    Annotator as Annotator,
)
from tailorbench.api.output_people import (
    CrowdStudy as CrowdStudy,
)
from tailorbench.api.output_people import (
    HumanStudyInit as HumanStudyInit,
)
from tailorbench.api.output_people import (
    HumanStudyPlan as HumanStudyPlan,
)
from tailorbench.api.output_people import (
    HumanStudyReport as HumanStudyReport,
)
from tailorbench.api.output_people import (
    HumanStudyRun as HumanStudyRun,
)
from tailorbench.api.output_people import (
    HumanStudyStatus as HumanStudyStatus,
)
from tailorbench.api.output_people import (
    ItemsImported as ItemsImported,
)
from tailorbench.api.output_people import (
    LabelsImported as LabelsImported,
)
from tailorbench.api.output_people import (
    Membership as Membership,
)
from tailorbench.api.output_people import (
    ParticipantLink as ParticipantLink,
)
from tailorbench.api.output_people import (
    ProjectCreated as ProjectCreated,
)
from tailorbench.api.output_people import (
    ProjectProgress as ProjectProgress,
)
from tailorbench.api.output_people import (
    Released as Released,
)
from tailorbench.api.output_people import (
    StudyLink as StudyLink,
)
from tailorbench.api.output_people import (
    StudyParticipant as StudyParticipant,
)
from tailorbench.api.output_people import (
    StudyReleased as StudyReleased,
)
from tailorbench.api.output_runs import (
    BenchmarkRunResult as BenchmarkRunResult,
)
from tailorbench.api.output_runs import (
    ChoiceResult as ChoiceResult,
)
from tailorbench.api.output_runs import (
    CompareResult as CompareResult,
)
from tailorbench.api.output_runs import (
    EvalResult as EvalResult,
)
from tailorbench.api.output_runs import (
    GenEvalResult as GenEvalResult,
)
from tailorbench.api.output_runs import (
    PrefEvalGenerationResult as PrefEvalGenerationResult,
)
from tailorbench.api.output_runs import (
    ReportedRun as ReportedRun,
)
from tailorbench.api.output_runs import (
    StageReportsResult as StageReportsResult,
)
from tailorbench.api.output_runs import (
    SuiteResult as SuiteResult,
)
from tailorbench.api.output_stages import (
    ExtractionReport as ExtractionReport,
)
from tailorbench.api.output_stages import (
    IncorporationReport as IncorporationReport,
)
from tailorbench.api.output_stages import (
    RelevanceReport as RelevanceReport,
)
from tailorbench.api.output_stages import (
    StageExample as StageExample,
)
from tailorbench.api.output_stages import (
    StageOutput as StageOutput,
)
from tailorbench.api.output_stages import (
    StageReport as StageReport,
)
from tailorbench.api.output_stages import (
    StageSummary as StageSummary,
)
from tailorbench.api.output_stages import (
    TrainedHeadReport as TrainedHeadReport,
)
from tailorbench.api.output_verbs import (
    AgreeResult as AgreeResult,
)
from tailorbench.api.output_verbs import (
    BatchesCancelled as BatchesCancelled,
)
from tailorbench.api.output_verbs import (
    BatchStatus as BatchStatus,
)
from tailorbench.api.output_verbs import (
    BuildResult as BuildResult,
)
from tailorbench.api.output_verbs import (
    CacheCleared as CacheCleared,
)
from tailorbench.api.output_verbs import (
    CacheStats as CacheStats,
)
from tailorbench.api.output_verbs import (
    DataCheck as DataCheck,
)
from tailorbench.api.output_verbs import (
    DataConverted as DataConverted,
)
from tailorbench.api.output_verbs import (
    DataPushed as DataPushed,
)
from tailorbench.api.output_verbs import (
    EstimatePlanResult as EstimatePlanResult,
)
from tailorbench.api.output_verbs import (
    EstimateResult as EstimateResult,
)
from tailorbench.api.output_verbs import (
    EstimateSampleResult as EstimateSampleResult,
)
from tailorbench.api.output_verbs import (
    TiersResult as TiersResult,
)
from tailorbench.api.output_verbs import (
    TrainResult as TrainResult,
)

__all__ = [
    "AgreeResult",
    "AnnotationExport",
    "Annotator",
    "BatchStatus",
    "BatchesCancelled",
    "BenchmarkRunResult",
    "BuildResult",
    "CacheCleared",
    "CacheStats",
    "ChoiceResult",
    "CompareResult",
    "CrowdStudy",
    "DataCheck",
    "DataConverted",
    "DataPushed",
    "EstimatePlanResult",
    "EstimateResult",
    "EstimateSampleResult",
    "EvalResult",
    "ExtractionReport",
    "GenEvalResult",
    "HumanStudyInit",
    "HumanStudyPlan",
    "HumanStudyReport",
    "HumanStudyRun",
    "HumanStudyStatus",
    "IncorporationReport",
    "ItemsImported",
    "LabelsImported",
    "Membership",
    "Output",
    "ParticipantLink",
    "PrefEvalGenerationResult",
    "ProjectCreated",
    "ProjectProgress",
    "Released",
    "RelevanceReport",
    "ReportedRun",
    "RunOutput",
    "StageExample",
    "StageOutput",
    "StageReport",
    "StageReportsResult",
    "StageSummary",
    "StudyLink",
    "StudyParticipant",
    "StudyReleased",
    "SuiteResult",
    "TiersResult",
    "TrainResult",
    "TrainedHeadReport",
    "returning",
]
