"""solver="auto"'s stall switch: a driver of the one loop that runs a first driver and, when that
method's certificate stops shrinking, goes on with another, warm-started from the last certified
point, within the same max_epochs budget (docs/solvers/auto.md, "The stall switch").

The stall test reads only what the loop already pays for, the certificate at each check. With
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
"""
from fastdual.solvers import get_solver, solver_options

MIN_PASSES = 64       # no verdict on a method before it has made this many passes
STALL_FACTOR = 0.5    # the best relative gap must at least halve over the latter half


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
    """Runs `first` (a built driver, labelled `first_label`) and then, at its stall, each of
    `stages` in turn: (solver name, options) built by `build` from the stalled method's last
    checkpoint. Everything the loop asks of a driver goes to the method running."""

    def __init__(self, problem, first, first_label, stages, seed):
        self.problem = problem
        self.current = first
        self.current_label = first_label
        self.stages = list(stages)
        self.seed = seed
        self.start = 0            # the loop's pass count when the running method started
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
        return self.current.epoch()

    def point(self):
        return self.current.point()

    def dual_vector_out(self):
        out = getattr(self.current, "dual_vector_out", None)
        return None if out is None else out()

    def check_due(self, epoch):
        """The running method's own answer; after a switch, also a check at 1, 2, 4, ... of the
        new method's passes, so that its rate is measured on its own checks (the schedule's
        interval was the stalled method's)."""
        due = self.current.check_due(epoch)
        if due is None and self.next_forced is not None and epoch - self.start >= self.next_forced:
            while self.next_forced <= epoch - self.start:
                self.next_forced *= 2
            return True
        return due

    def after_check(self, checkpoint):
        self.current.after_check(checkpoint)
        passes = checkpoint.epoch - self.start
        gap = checkpoint.relative_gap
        if self.best:
            gap = min(gap, self.best[-1][1])
        self.best.append((passes, gap))
        if self.stages and self.stalled(passes, gap):
            self.switch(checkpoint)

    def stalled(self, passes, gap):
        """Whether the best relative gap has not halved over the latter half of the running
        method's passes (after MIN_PASSES of them)."""
        if passes < MIN_PASSES:
            return False
        earlier = [best for done, best in self.best if done <= passes // 2]
        return bool(earlier) and gap > STALL_FACTOR * earlier[-1]

    def switch(self, checkpoint):
        name, options = self.stages.pop(0)
        new_label = label(name, options)
        self.switches.append({"epoch": int(checkpoint.epoch), "from": self.current_label,
                              "to": new_label, "solver": name,
                              "relative_gap": float(checkpoint.relative_gap)})
        self.current = build(self.problem, name, options, self.seed,
                             duals=checkpoint.duals, w=checkpoint.w)
        self.current_label = new_label
        self.start = checkpoint.epoch
        self.best = []
        self.next_forced = 1
