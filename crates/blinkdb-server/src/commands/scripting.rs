//! EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT, FCALL, FCALL_RO and FUNCTION
//! (crate::scripting does the work).

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

pub fn fcall(ctx: &mut Ctx, args: &Args) {
    crate::scripting::functions::fcall(ctx, args, false);
}

pub fn fcall_ro(ctx: &mut Ctx, args: &Args) {
    crate::scripting::functions::fcall(ctx, args, true);
}

pub fn function(ctx: &mut Ctx, args: &Args) {
    crate::scripting::functions::function(ctx, args);
}
