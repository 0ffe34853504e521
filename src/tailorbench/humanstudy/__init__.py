"""A whole human study from one config (`tailor study`, docs/study.md): the three stages' model steps through
the stage verbs, their annotation through the annotation service, state in STUDY_DIR, the study report."""
