//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT (crate::scripting does
//! the work).

use super::Ctx;
use crate::protocol::Args;

pub fn eval(ctx: &mut Ctx, args: &Args) {
    crate::scripting::eval(ctx, args, false, false);
}

pub fn evalsha(ctx: &mut Ctx, args: &Args) {
    crate::scripting::eval(ctx, args, true, false);
}

pub fn eval_ro(ctx: &mut Ctx, args: &Args) {
    crate::scripting::eval(ctx, args, false, true);
}

pub fn evalsha_ro(ctx: &mut Ctx, args: &Args) {
    crate::scripting::eval(ctx, args, true, true);
}

pub fn script(ctx: &mut Ctx, args: &Args) {
    crate::scripting::script(ctx, args);
}
