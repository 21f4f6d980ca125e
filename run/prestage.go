package run

// prestage is the part of a launch a platform starts before the policy
// exists, to overlap its start with the policy work (on Linux, the stage:
// a second start of this program). startPrestage starts it for a
// platform; adopt gives the plan that runs with it, and abandon ends it
// when no plan used it (after a run, it does nothing).
type prestage interface {
	adopt(Plan) Plan
	abandon()
}
