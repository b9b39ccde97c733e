"""`python -m descheduler.policy > config/policy.schema.json` regenerates the schema."""

import sys

from descheduler.policy.loading import schema_text

sys.stdout.write(schema_text())
