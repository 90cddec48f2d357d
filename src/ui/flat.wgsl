// The lite profile's material: base colour times a Lambert term for one fixed key light plus a
// constant fill. A few instructions per pixel, where Bevy's PBR shader runs thousands: under a
// software rasterizer (llvmpipe) this is what a frame mostly costs.
#import bevy_pbr::forward_io::VertexOutput

struct FlatMaterial {
    // Linear RGBA.
    color: vec4<f32>,
    // Direction towards the key light (world, normalized), and the fill fraction in w.
    light: vec4<f32>,
}

@group(#{MATERIAL_BIND_GROUP}) @binding(0) var<uniform> material: FlatMaterial;

@fragment
fn fragment(in: VertexOutput, @builtin(front_facing) front: bool) -> @location(0) vec4<f32> {
    var n = normalize(in.world_normal);
    if !front {
        n = -n;
    }
    let key = max(dot(n, material.light.xyz), 0.0);
    let fill = material.light.w;
    return vec4<f32>(material.color.rgb * (fill + (1.0 - fill) * key), material.color.a);
}
