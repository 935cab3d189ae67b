"""The statuses of a published number in the reproduction report: one word per cell.

Verdicts on our reproduction:

- ``pass``: within the cell's derived tolerance;
- ``deviation``: outside it, with a declared cause whose check holds (computed, never assumed);
- ``fail``: outside it, no verified cause.

Not verdicts (listed, not judged):

- ``input``: a published number our computation takes as input;
- ``informational``: set beside a different model or network, a second reading of an artifact, or a
  consistency check of the paper's own arithmetic;
- ``not-run-here``: public inputs this machine cannot obtain (the cause says what would run it);
- ``not-reproducible``: inputs that do not exist publicly (the cause says why).
"""

VERDICTS = ("pass", "deviation", "fail")
NON_VERDICTS = ("input", "informational", "not-run-here", "not-reproducible")
STATUSES = VERDICTS + NON_VERDICTS
