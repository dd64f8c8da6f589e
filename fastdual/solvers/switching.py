"""solver="auto"'s stall switch: a driver of the one loop that runs a first driver and, when that
method's certificate stops shrinking, goes on with another, warm-started from the last certified
point, within the same max_epochs budget (docs/solvers/auto.md, "The stall switch").

The stall test reads only what the loop already pays for: the certificate at each check, and
for a method that knows its point's gap without one (Newton with l2 alone), that gap at each
iteration (Switching.may_reach; the test then compares windows, stalled_by_known). With
`g(p)` the smallest relative gap certified in the first `p` passes of the running method, the
method has stalled at a check after `p >= MIN_PASSES` of its passes when

    g(p) > STALL_FACTOR * g(p / 2):

its best relative gap has not halved over the latter half of its passes (the checks of the
"auto" schedule come at about doubling intervals when the gap shrinks slowly, so that is the
last interval or two). A method whose gap shrinks linearly at any useful rate halves it in
every doubling of its passes; a stalled one (plain SDCA at a large condition number, a
primal method whose margins never certify) does not.

The next method starts from the checkpoint the test was made on: its duals (a dual method's
start; Newton's w(duals) is then replaced by the checkpoint's w through `start_from`), so no
certified progress is lost; `switches` records each switch, and the model's `switches_`
reports them.

A stage may be a *handover* (class Handover): the running method hands over to it after a
fixed number of its passes, whether or not it has stalled (SDCA's first epochs as Newton's
start on rows of very different lengths, docs/solvers/auto.md "SDCA's first epochs before
Newton").

A stage may be a *correction* (class Correction): a few steps of another method from the
stalled point, after which the stalled method goes on from the correction's point (its duals:
a primal method's margin duals), and the correction is queued again for the method's next
stall. It is what SDCA needs on rows of very different lengths (raw text): there a few Newton
steps from SDCA's w lower the primal far, and SDCA restarted from the duals of Newton's margins
reaches in tens of epochs what neither reached in hundreds of passes (docs/solvers/auto.md,
"Newton corrections", measured on news20). During a correction its w is certified with the stalled point's duals, so no
check certifies less than the stalled point did. A correction that does not lower the primal by
at least CORRECTION_GAIN times the stalled point's gap, or whose restart has not passed the
stalled point's dual within PROBATION passes (the margin duals were a worse start), is
undone: the stalled driver goes on as it was, and no correction is tried again.
"""

from dataclasses import dataclass

from fastdual.solvers import get_solver, solver_options

MIN_PASSES = 64       # no verdict on a method before it has made this many passes
STALL_FACTOR = 0.5    # the best relative gap must at least halve over the latter half
CORRECTION_GAIN = 0.1  # a correction must lower the primal by this share of the stalled gap
PROBATION = 64        # passes in which the method resumed from a correction must pass the
                      # stalled point's dual


@dataclass(frozen=True)
class Handover:
    """A stage the running method hands over to after `after` of its passes (or at its stall,
    whichever comes first): e.g. SDCA's first epochs as Newton's start."""
    name: str
    options: dict
    after: int


@dataclass(frozen=True)
class Correction:
    """A stage of `steps` steps (epoch() calls: Newton iterations) of the solver `name`, after
    which the stalled method resumes from the correction's certified point."""
    name: str
    options: dict
    steps: int


def label(name, options):
    """A method's name in the switch records and messages: the solver, with acceleration."""
    return name + ("(acceleration=True)" if options.get("acceleration") else "")


def build(problem, name, options, seed, duals=None, w=None):
    """A driver of the solver `name` with its checked options, started from the duals and
    (a primal solver, through start_from) from w."""
    driver_class = get_solver(name, problem)
    driver = driver_class(problem, solver_options(driver_class, options), seed, duals)
    if w is not None and hasattr(driver, "start_from"):
        driver.start_from(w)
    return driver


class Switching:
    """Runs `first` (a built driver of the stage `first_stage`, (solver name, options)) and
    then, at its stall, each of `stages` in turn: (solver name, options) built by `build` from
    the stalled method's last checkpoint, a Correction, or a Handover (taken at its pass count
    if the running method has not stalled before). Everything the loop asks of a driver goes
    to the method running."""

    def __init__(self, problem, first, first_stage, stages, seed):
        self.problem = problem
        self.current = first
        self.current_stage = tuple(first_stage)
        self.current_label = label(*first_stage)
        self.stages = list(stages)
        self.correction = None    # while one runs: (Correction, the stalled checkpoint)
        self.probation = None     # after one: the stalled checkpoint, until its dual is passed
        self.paused = None        # the stalled method's driver, as it stalled, during both
        self.steps = 0            # epoch() calls of the running correction
        self.seed = seed
        self.start = 0            # the loop's pass count when the running method started
        self.passes = 0           # the loop's pass count (the epochs' passes so far)
        self.next_known_test = MIN_PASSES   # passes of the next stall test on known gaps
        self.known = []           # (passes of the running method, the gap it knew then)
        self.best = []            # (passes of the running method, best relative gap so far)
        self.next_forced = None   # after a switch: the stage passes of its next forced check
        self.switches = []
        self.first_name = first.name     # the solver of every checkpoint before a switch

    # what the loop and make_model read of a driver, the running method's
    @property
    def name(self):
        return self.current.name

    @property
    def description(self):
        return getattr(self.current, "description", self.current_label)

    @property
    def helper_l2(self):
        return self.current.helper_l2

    def epoch(self):
        self.steps += 1
        passes = self.current.epoch()
        self.passes += 1 if passes is None else int(passes)
        return passes

    def point(self):
        """The running method's point; during a correction, its w certified with the stalled
        point's duals (its own, a primal method's margin duals, certify little where SDCA
        stalled), so that a correction's checks, and a budget that ends during one, certify
        no less than the stalled point did (the correction's steps start from that w and never
        raise the primal)."""
        w, duals = self.current.point()
        if self.correction is not None:
            duals = self.correction[1].duals
        return w, duals

    @property
    def keeps_check_spacing(self):
        return bool(getattr(self.current, "keeps_check_spacing", False))

    def check_work(self):
        work = getattr(self.current, "check_work", None)
        return 1.0 if work is None else work()

    def may_reach(self, tol):
        """The running method's answer (the "auto" schedule's question: whether a certificate
        may reach tol), but the stall test must still see the gap: where the method knows its
        point's relative gap without a certificate (`known_gap()`: Newton's ||g||^2 / (2 l2)),
        that gap is recorded for the test in the check's place, and the test (by windows:
        stalled_by_known) is made at each doubling of the method's passes from MIN_PASSES on
        (where the schedule's checks of a slowly falling gap come: a test at every iteration
        would read the dips and spikes of a gap that is not monotone as stalls); a stall it
        shows is checked (the switch starts from a checkpoint). A method that does not know
        its gap is checked on the schedule. During a correction, always."""
        reach = getattr(self.current, "may_reach", None)
        if self.correction is not None or reach is None or reach(tol):
            return True
        known = getattr(self.current, "known_gap", None)
        gap = None if known is None else known()
        if gap is None:
            return True
        passes = self.passes - self.start
        self.known.append((passes, gap))
        if passes < self.next_known_test:
            return False
        while self.next_known_test <= passes:
            self.next_known_test *= 2
        return bool(self.stages) and self.stalled_by_known(passes)

    def stalled_by_known(self, passes):
        """The stall test on the gaps known at every iteration, by windows: whether the best
        gap of the latter half of the passes is above STALL_FACTOR times the best of the
        quarter before it. (The best of all the first half, as the certified test takes it,
        would let one early iterate veto what follows: Newton's first on w8a's smoothed hinge
        at alpha 1e-8 knew 1.3e5, its next ones 6.9e7 falling to 1.5e5 by pass 66, and it
        converged at 110.)"""
        if passes < MIN_PASSES:
            return False
        earlier = [gap for done, gap in self.known if passes // 4 < done <= passes // 2]
        later = [gap for done, gap in self.known if passes // 2 < done <= passes]
        return bool(earlier) and bool(later) and min(later) > STALL_FACTOR * min(earlier)

    def dual_vector_out(self):
        out = getattr(self.current, "dual_vector_out", None)
        return None if out is None else out()

    def check_due(self, epoch):
        """The running method's own answer; after a switch, also a check at 1, 2, 4, ... of the
        new method's passes, so that its rate is measured on its own checks (the schedule's
        interval was the stalled method's), but for a method that knows its gap without a
        certificate (`knows_gap`: its may_reach, asked at every epoch once the schedule is due,
        and its known gaps in the stall test take their place); a correction's point is
        checked after its steps."""
        if self.correction is not None and self.steps >= self.correction[0].steps:
            return True
        if self._handing_over(epoch - self.start):
            return True
        due = self.current.check_due(epoch)
        if (due is None and self.next_forced is not None and epoch - self.start >= self.next_forced
                and not getattr(self.current, "knows_gap", False)):
            while self.next_forced <= epoch - self.start:
                self.next_forced *= 2
            return True
        return due

    def after_check(self, checkpoint):
        self.current.after_check(checkpoint)
        if self.correction is not None:
            if self.steps >= self.correction[0].steps:
                self.resume(checkpoint)
            return
        passes = checkpoint.epoch - self.start
        if self.probation is not None:
            stalled = self.probation
            if checkpoint.dual >= stalled.dual:
                self.probation = self.paused = None
            elif passes >= PROBATION:
                self.revert(checkpoint)
                return
        gap = checkpoint.relative_gap
        if self.known:          # a method that knows its gaps: the test by windows, this one's
            self.known.append((passes, gap))            # among them
        if self.best:
            gap = min(gap, self.best[-1][1])
        self.best.append((passes, gap))
        stall = self.stalled_by_known(passes) if self.known else self.stalled(passes, gap)
        if self.stages and (self._handing_over(passes) or stall):
            self.switch(checkpoint)

    def _handing_over(self, passes):
        """Whether the next stage is a Handover due after this many passes of the running
        method."""
        return (self.correction is None and bool(self.stages)
                and isinstance(self.stages[0], Handover) and passes >= self.stages[0].after)

    def stalled(self, passes, gap):
        """Whether the best relative gap has not halved over the latter half of the running
        method's passes (after MIN_PASSES of them)."""
        if passes < MIN_PASSES:
            return False
        earlier = [best for done, best in self.best if done <= passes // 2]
        return bool(earlier) and gap > STALL_FACTOR * earlier[-1]

    def switch(self, checkpoint):
        stage = self.stages.pop(0)
        if isinstance(stage, Correction):
            self.correction = (stage, checkpoint)
            self.paused = self.current
            self._run(stage.name, stage.options, checkpoint, checkpoint.duals, checkpoint.w,
                      "stalled")
        elif isinstance(stage, Handover):
            self.current_stage = (stage.name, stage.options)
            self._run(stage.name, stage.options, checkpoint, checkpoint.duals, checkpoint.w,
                      f"handed over after {checkpoint.epoch - self.start} passes")
        else:
            self.current_stage = tuple(stage)
            self._run(*stage, checkpoint, checkpoint.duals, checkpoint.w, "stalled")

    def resume(self, checkpoint):
        """The end of a correction (checkpoint: its point): the stalled method goes on from it
        and the correction is queued again, or, if it did not lower the primal by
        CORRECTION_GAIN times the stalled point's gap, from the stalled point, without it."""
        correction, stalled = self.correction
        self.correction = None
        if stalled.primal - checkpoint.primal >= CORRECTION_GAIN * stalled.gap:
            self.stages.insert(0, correction)
            duals = self.problem.duals_from_margins(checkpoint.w)
            self.probation = stalled
            self._run(*self.current_stage, checkpoint, duals, checkpoint.w,
                      "correction paid")
        else:
            self._continue_paused(checkpoint, "correction lowered the primal too little: undone")

    def revert(self, checkpoint):
        """A method resumed from a correction's point that has not passed the stalled point's
        dual within PROBATION passes (the margin duals of the correction's w were a worse
        start): the stalled driver goes on where it stopped, and no correction is tried
        again."""
        self.probation = None
        self.stages = [stage for stage in self.stages if not isinstance(stage, Correction)]
        self._continue_paused(checkpoint, "restart stayed below the stalled dual: undone")

    def _continue_paused(self, checkpoint, reason):
        """The stalled method's own driver goes on from where it stalled (its state, its
        random stream: as if the correction had not been made), recorded as a switch."""
        self._record(checkpoint, *self.current_stage, reason)
        self.current, self.paused = self.paused, None
        self._restart_counts()

    def _run(self, name, options, checkpoint, duals, w, reason):
        """Go on with the solver `name` (options) from the duals (and w, for a primal solver),
        recorded as a switch at `checkpoint` for `reason` (what the running method did)."""
        self._record(checkpoint, name, options, reason)
        self.current = build(self.problem, name, options, self.seed, duals=duals, w=w)
        self._restart_counts()

    def _record(self, checkpoint, name, options, reason):
        new_label = label(name, options)
        self.switches.append({"epoch": int(checkpoint.epoch), "from": self.current_label,
                              "to": new_label, "solver": name, "reason": reason,
                              "relative_gap": float(checkpoint.relative_gap)})
        self.current_label = new_label
        self.start = checkpoint.epoch

    def _restart_counts(self):
        """The stall test's and the correction's counts start again with the method now
        running."""
        self.steps = 0
        self.best = []
        self.known = []
        self.next_known_test = MIN_PASSES
        self.next_forced = None if self.correction is not None else 1
