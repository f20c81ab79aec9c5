"""`kineto-sql diagnose`: the reading order, every applicable detector, ranked findings, narrated."""
from kineto_sql.diagnose.model import Diagnosis, Finding, TraceDiagnosis, Verdict
from kineto_sql.diagnose.run import diagnose_path, diagnose_trace

__all__ = ["Diagnosis", "Finding", "TraceDiagnosis", "Verdict", "diagnose_path", "diagnose_trace"]
